"""A client that leaves ends what it started, at once: the call's process in the box is
killed, a one-shot box is released (no record, no cgroup left), whatever the route (plain
HTTP, server-sent events, the interactive WebSocket, the call channel) and however the
client goes (a close frame, or its connection simply dropped)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from golem.sandbox.records import BoxRecord
from tests.service.served import Served, unb64

pytestmark = pytest.mark.bwrap

DEADLINE = 30.0
CALL = "echo $$ > /workspace/call.pid; echo up; exec sleep 3600"
NEEDLE = "sleep 3600"


@pytest.fixture(scope="module")
def served(unpooled_server: Served) -> Iterator[Served]:
    """No warm pool: a released box is stopped, so its record and cgroups must go."""
    with unpooled_server.tidied() as server:
        yield server


@pytest.fixture
def key(served: Served) -> str:
    """A tenant of the test's own: what one test leaves behind cannot fail the next."""
    return served.tenant_key("t")


@pytest.fixture
def acme(served: Served, key: str) -> Iterator[httpx.Client]:
    with served.client(key) as client:
        yield client


@pytest.fixture
def session(acme: httpx.Client) -> Iterator[str]:
    made = acme.post("/v1/sessions", json={})
    assert made.status_code == 201, made.text
    yield made.json()["id"]
    acme.delete(f"/v1/sessions/{made.json()['id']}")


def until(condition: Callable[[], Any], what: str) -> Any:
    """``condition``'s first true value, polled until the deadline (no event tells it)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {DEADLINE:.0f}s: {what}")


def box_pids(box_id: str, needle: str = NEEDLE) -> list[int]:
    """Host pids in the box's cgroups whose command line holds ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or box_id not in (entry / "cgroup").read_text():
                continue
            if needle in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def record_file(served: Served, box_id: str) -> Path:
    return served.state_dir / "boxes" / f"{box_id}.json"


def assert_call_ended(acme: httpx.Client, session: str) -> None:
    """The call's process (its pid in call.pid) is gone, seen from the box."""
    path = f"/v1/sessions/{session}/exec"

    def gone() -> bool:
        probe = "kill -0 $(cat /workspace/call.pid) 2>/dev/null && echo alive || echo gone"
        answer = acme.post(path, json={"cmd": probe})
        return bool(unb64(answer.json()["stdout"]) == b"gone\n")

    until(gone, "the call's process killed after its client left")


def one_shot_box(served: Served, acme: httpx.Client) -> BoxRecord:
    """The one box of a one-shot call, once its call runs."""
    ids = until(lambda: [s["id"] for s in acme.get("/v1/sessions").json()], "a one-shot box")
    assert len(ids) == 1, ids
    until(lambda: box_pids(ids[0]), "the one-shot call running")
    record = BoxRecord.model_validate_json(record_file(served, ids[0]).read_text())
    assert record.state["cgroup_dirs"], "this machine gives boxes cgroups"
    return record


def assert_released(served: Served, acme: httpx.Client, record: BoxRecord) -> None:
    """The one-shot box is gone: its call, its session, its record, its cgroups."""
    until(lambda: not box_pids(record.id), "the one-shot call killed")
    until(lambda: acme.get("/v1/sessions").json() == [], "the one-shot session released")
    until(lambda: not record_file(served, record.id).exists(), "the one-shot box's record gone")
    left = [d for d in record.state["cgroup_dirs"] if Path(d).exists()]
    assert left == []


def raw_request(served: Served, key: str, path: str, body: dict[str, Any]) -> socket.socket:
    """An HTTP request sent on a socket of its own, which the test drops when it likes."""
    host, port = served.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    return sock


def drop(sock: socket.socket) -> None:
    """Leave without a word: a reset, as a client that crashed or lost its network."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def test_a_session_call_ends_when_its_http_client_leaves(
    served: Served, key: str, acme: httpx.Client, session: str
) -> None:
    sock = raw_request(served, key, f"/v1/sessions/{session}/exec", {"cmd": CALL})
    until(lambda: box_pids(session), "the call running")
    drop(sock)
    assert_call_ended(acme, session)


def test_a_one_shot_call_ends_and_its_box_goes_when_its_client_leaves(
    served: Served, key: str, acme: httpx.Client
) -> None:
    sock = raw_request(served, key, "/v1/exec", {"request": {"cmd": CALL}})
    record = one_shot_box(served, acme)
    drop(sock)
    assert_released(served, acme, record)


@pytest.mark.parametrize("quiet", [False, True])
def test_an_abandoned_one_shot_stream_releases_its_box(
    served: Served, key: str, acme: httpx.Client, quiet: bool
) -> None:
    cmd = CALL if quiet else "while :; do echo tick; sleep 0.01; done & " + CALL
    sock = raw_request(served, key, "/v1/exec/stream", {"request": {"cmd": cmd}})
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    record = one_shot_box(served, acme)
    drop(sock)
    assert_released(served, acme, record)


def test_an_abandoned_session_stream_ends_its_call(
    served: Served, key: str, acme: httpx.Client, session: str
) -> None:
    sock = raw_request(served, key, f"/v1/sessions/{session}/exec/stream", {"cmd": CALL})
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    until(lambda: box_pids(session), "the call running")
    drop(sock)
    assert_call_ended(acme, session)


@contextlib.contextmanager
def _socket(served: Served, key: str, path: str) -> Iterator[ClientConnection]:
    url = served.url.replace("http://", "ws://") + path
    with (
        contextlib.suppress(OSError, ConnectionClosed),
        connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws,
    ):
        yield ws


def _leave(ws: ClientConnection, politely: bool) -> None:
    if politely:
        ws.close()
    else:
        drop(ws.socket)


@pytest.mark.parametrize("politely", [True, False], ids=["close", "drop"])
@pytest.mark.parametrize("pty", [False, True], ids=["pipes", "pty"])
def test_an_interactive_call_ends_when_its_socket_goes(
    served: Served, key: str, acme: httpx.Client, session: str, pty: bool, politely: bool
) -> None:
    with _socket(served, key, f"/v1/sessions/{session}/exec/ws") as ws:
        ws.send(json.dumps({"request": {"cmd": CALL}, "pty": pty}))
        while b"up" not in unb64(json.loads(ws.recv(DEADLINE)).get("data", "")):
            pass
        _leave(ws, politely)
    assert_call_ended(acme, session)


@pytest.mark.parametrize("politely", [True, False], ids=["close", "drop"])
def test_the_call_channel_ends_every_call_of_a_socket_that_goes(
    served: Served, key: str, acme: httpx.Client, session: str, politely: bool
) -> None:
    calls = [("execute", "exec sleep 3601"), ("stream", "echo up; exec sleep 3602")]
    with _socket(served, key, f"/v1/sessions/{session}/calls") as ws:
        for number, (op, cmd) in enumerate(calls):
            ws.send(json.dumps({"id": number, "op": op, "request": {"cmd": cmd}}))
        assert json.loads(ws.recv(DEADLINE))["id"] == 1  # the stream's first event: "up"
        until(lambda: box_pids(session, "sleep 3601"), "the execute call running")
        until(lambda: box_pids(session, "sleep 3602"), "the stream call running")
        _leave(ws, politely)
    until(lambda: not box_pids(session, "sleep 360"), "every call of the socket killed")


def _setting_up(served: Served, acme: httpx.Client, known: set[str]) -> str:
    """The box being made for a session whose setup script runs (the tenant has none yet)."""

    def made() -> list[str]:
        return [p.stem for p in (served.state_dir / "boxes").glob("*.json") if p.stem not in known]

    (box_id,) = until(made, "a box made for the session")
    until(lambda: box_pids(box_id), "the setup script running")
    assert acme.get("/v1/sessions").json() == []
    return box_id


@pytest.mark.parametrize("path", ["/v1/sessions", "/v1/sessions/stream"])
def test_a_session_whose_client_leaves_during_its_setup_is_not_kept(
    served: Served, key: str, acme: httpx.Client, path: str
) -> None:
    known = {p.stem for p in (served.state_dir / "boxes").glob("*.json")}
    sock = raw_request(served, key, path, {"spec": {"setup": CALL}})
    box_id = _setting_up(served, acme, known)
    drop(sock)
    until(lambda: not box_pids(box_id), "the setup script killed")
    until(lambda: not record_file(served, box_id).exists(), "the box's record gone")
    assert acme.get("/v1/sessions").json() == []
