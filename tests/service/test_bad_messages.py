"""WebSocket clients that misbehave: a message that cannot be read closes the socket with a
code and a reason (never a server traceback); a call the channel cannot take (an id in use,
no request, past the role's ``max_calls_per_socket``) is refused alone and the socket goes
on; RemoteEngine keeps to the cap the handshake tells."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from golem.core import GolemConfig
from golem.sandbox import (
    EndFrame,
    ErrorFrame,
    EventFrame,
    RemoteEngine,
    ResultFrame,
    read_answer,
)
from tests.service.served import Served, shared_server, unb64

pytestmark = pytest.mark.bwrap

WAIT = 60.0
CAPPED = "[engine.pool]\nclean = 0\n\n[server.policies.user]\nmax_calls_per_socket = 2\n"


served = shared_server("bad", config=CAPPED)


@pytest.fixture
def key(served: Served) -> str:
    return served.tenant_key("t")


@pytest.fixture
def session(served: Served, key: str) -> Iterator[str]:
    with served.client(key) as client:
        made = client.post("/v1/sessions", json={})
        assert made.status_code == 201, made.text
        yield made.json()["id"]
        client.delete(f"/v1/sessions/{made.json()['id']}")


def _socket(served: Served, key: str, path: str) -> ClientConnection:
    url = served.url.replace("http://", "ws://") + path
    return connect(url, additional_headers={"Authorization": f"Bearer {key}"})


def _closed(ws: ClientConnection) -> tuple[int, str]:
    """The close code and reason, after the error frame that names the problem."""
    frame = json.loads(ws.recv(WAIT))
    assert frame["type"] == "error", frame
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(WAIT)
    assert closed.value.rcvd is not None, "the server dropped the socket without a close frame"
    return closed.value.rcvd.code, closed.value.rcvd.reason


UNREADABLE: list[str | bytes] = [
    b"\x00\x01\xff",  # a binary frame that is no JSON
    "[1, 2]",  # a list
    "3",  # a number
    "",  # nothing
    '{"a":' * 5000,  # nested past the parser's depth
]
FIRST: list[str | bytes] = [*UNREADABLE, json.dumps({"request": {"cmd": "true"}, "sudo": 1})]
LATER: list[str | bytes] = [*UNREADABLE, json.dumps({"signal": "TERM"}), '{"stdin": 7}']
CHANNEL: list[str | bytes] = [
    *UNREADABLE,
    json.dumps({"id": 1, "op": "shell", "request": {"cmd": "true"}}),
    json.dumps({"id": 1, "op": "execute", "request": {"cmd": "true"}, "sudo": 1}),
    json.dumps({"id": -1, "op": "cancel"}),
]


def _no_traceback(served: Served) -> None:
    log = "".join(served.output)
    assert "Traceback" not in log, log[-4000:]


@pytest.mark.parametrize("message", FIRST)
def test_an_unreadable_first_message_closes_the_interactive_socket(
    served: Served, key: str, session: str, message: str | bytes
) -> None:
    with _socket(served, key, f"/v1/sessions/{session}/exec/ws") as ws:
        ws.send(message)
        code, reason = _closed(ws)
    assert (code, bool(reason)) == (4400, True)
    _no_traceback(served)


@pytest.mark.parametrize("message", LATER)
def test_an_unreadable_later_message_ends_the_call_and_closes(
    served: Served, key: str, session: str, message: str | bytes
) -> None:
    with _socket(served, key, f"/v1/sessions/{session}/exec/ws") as ws:
        ws.send(json.dumps({"request": {"cmd": "echo up; exec sleep 3600"}}))
        assert unb64(json.loads(ws.recv(WAIT))["data"]) == b"up\n"
        ws.send(message)
        code, reason = _closed(ws)
    assert (code, bool(reason)) == (4400, True)
    _no_traceback(served)


@pytest.mark.parametrize("message", CHANNEL)
def test_an_unreadable_channel_message_closes_the_channel(
    served: Served, key: str, session: str, message: str | bytes
) -> None:
    with _socket(served, key, f"/v1/sessions/{session}/calls") as ws:
        ws.send(message)
        code, reason = _closed(ws)
    assert (code, bool(reason)) == (4400, True)
    _no_traceback(served)


def _call(ws: ClientConnection, call_id: int, op: str, cmd: str | None = None) -> None:
    message: dict[str, Any] = {"id": call_id, "op": op}
    if cmd is not None:
        message["request"] = {"cmd": cmd}
    ws.send(json.dumps(message))


def _frame(ws: ClientConnection) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(ws.recv(WAIT))
    return frame


def test_every_frame_a_real_server_sends_is_one_of_the_wire_models_byte_for_byte(
    served: Served, key: str, session: str
) -> None:
    """The server writes its frames with the models of ``golem.sandbox.remote.frames``: each
    frame it sends, read back with them, is exactly the bytes it sent (result, events, end,
    error), and a frame of none of them is refused."""
    with _socket(served, key, f"/v1/sessions/{session}/calls") as ws:
        _call(ws, 1, "execute", "printf 'a\\377'; exit 3")
        _call(ws, 2, "stream", "echo out; echo err >&2")
        _call(ws, 3, "execute")
        raw: list[str] = []
        ended: set[int] = set()
        while ended != {1, 2, 3}:
            message = ws.recv(WAIT)
            assert isinstance(message, str)
            raw.append(message)
            if set(sent := json.loads(message)) & {"result", "end", "error"}:
                ended.add(sent["id"])
    frames = [read_answer(message) for message in raw]
    assert [frame.model_dump_json() for frame in frames] == raw
    kinds = {(frame.id, type(frame)) for frame in frames}
    assert {(1, ResultFrame), (2, EventFrame), (2, EndFrame), (3, ErrorFrame)} <= kinds
    result = next(frame for frame in frames if isinstance(frame, ResultFrame))
    assert (result.result.stdout, result.result.exit_code) == (b"a\xff", 3)


def test_a_call_the_channel_cannot_take_is_refused_alone(
    served: Served, key: str, session: str
) -> None:
    with _socket(served, key, f"/v1/sessions/{session}/calls") as ws:
        assert ws.response is not None
        assert ws.response.headers["Golem-Max-Calls"] == "2"
        _call(ws, 1, "execute")
        lacking = {"status": 422, "kind": "BadMessage", "detail": "call 1 (execute) has no request"}
        assert _frame(ws) == {"id": 1, "error": lacking}
        _call(ws, 2, "stream", "echo up; exec sleep 3600")
        assert unb64(_frame(ws)["event"]["data"]) == b"up\n"
        _call(ws, 2, "execute", "true")
        refused = _frame(ws)
        assert (refused["id"], refused["error"]["status"]) == (2, 409), refused
        _call(ws, 3, "stream", "echo up; exec sleep 3600")
        assert unb64(_frame(ws)["event"]["data"]) == b"up\n"
        _call(ws, 4, "execute", "echo four")
        over = _frame(ws)
        assert (over["id"], over["error"]["status"]) == (4, 429), over
        assert "server.policies.user.max_calls_per_socket" in over["error"]["detail"]
        _call(ws, 2, "cancel")
        _call(ws, 4, "execute", "echo four")
        taken = _frame(ws)
        assert taken["id"] == 4, taken
        assert unb64(taken["result"]["stdout"]) == b"four\n"
    _no_traceback(served)


@pytest.fixture
async def remote(served: Served, key: str, config: GolemConfig) -> AsyncIterator[RemoteEngine]:
    async with RemoteEngine(served.url, key, config=config) as engine:
        yield engine


async def test_remote_engine_keeps_to_the_cap_the_handshake_tells(remote: RemoteEngine) -> None:
    async with remote.session() as box:
        # Five calls at once on a socket that runs two: each waits for its turn in the
        # client, none is refused.
        calls = [box.execute(f"sleep 0.5; echo {n}") for n in range(5)]
        results = await asyncio.gather(*calls)
    assert [r.stdout_text for r in results] == [f"{n}\n" for n in range(5)]
