"""The call channel's client end against a server that sends frames of no kind the wire
knows (``golem.sandbox.remote.frames``): each call on the socket ends with MalformedFrame,
which quotes the frame and says what to do, the client closes the socket (1002), and the
next call opens a new one. The server here is a real WebSocket server on loopback that
answers as a golem server does, except for the frame under test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from golem.core import GolemConfig
from golem.core.errors import MalformedFrame
from golem.sandbox import CallMessage, RemoteEngine, Resize

WAIT = 30.0
SESSION = {"id": "s1", "created": 0.0, "spec": {}}
GOOD_RESULT = {"stdout": "", "stderr": "", "exit_code": 0, "duration": 0.1}

MALFORMED: list[str | bytes] = [
    b"\x00\x01\xff",  # a binary frame that is no JSON
    "{",  # JSON cut short
    "[1, 2]",  # no object
    '"end"',
    "{}",  # no id
    '{"id": 0}',  # no kind
    '{"id": 0, "end": true, "error": {"status": 500, "detail": "x"}}',  # two kinds
    '{"id": 0, "end": false}',
    '{"id": "0", "end": true}',  # an id that is no integer
    '{"id": -1, "end": true}',
    '{"id": 0, "result": {"stdout": "not base64!"}}',  # a result short of its fields
    '{"id": 0, "event": {"type": "no-such-event"}}',
    '{"id": 0, "error": {"status": "bad"}}',
]


@dataclass
class FakeServer:
    """What the server was sent and how its sockets closed."""

    reply: str | bytes = ""
    calls: list[dict[str, object]] = field(default_factory=list)
    closes: list[int | None] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def http(self, connection: ServerConnection, request: Request) -> Response | None:
        """A session's GET as a golem server answers it; the call channel is upgraded."""
        if request.path.endswith("/calls"):
            return None
        headers = Headers({"Content-Type": "application/json"})
        body = json.dumps(SESSION).encode()
        return Response(200, "OK", headers, body)

    async def channel(self, socket: ServerConnection) -> None:
        """Answer each call with the reply under test (a good result once it is spent)."""
        try:
            async for message in socket:
                call = json.loads(message)
                self.calls.append(call)
                if call["op"] == "cancel":
                    continue
                good = json.dumps({"id": call["id"], "result": GOOD_RESULT})
                reply, self.reply = self.reply or good, ""
                await socket.send(reply)
        except ConnectionClosed:
            pass
        finally:
            self.closes.append(socket.close_code)
            self.closed.set()


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeServer, str]]:
    server = FakeServer()
    async with serve(server.channel, "127.0.0.1", 0, process_request=server.http) as running:
        port = running.sockets[0].getsockname()[1]
        yield server, f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("frame", MALFORMED)
async def test_a_frame_of_no_kind_ends_the_call_with_an_error_that_names_it(
    fake: tuple[FakeServer, str], config: GolemConfig, frame: str | bytes
) -> None:
    server, url = fake
    server.reply = frame
    async with RemoteEngine(url, "key", config=config) as engine, asyncio.timeout(WAIT):
        box = await engine.get_session("s1")
        with pytest.raises(MalformedFrame) as malformed:
            await box.execute("true")
        message = str(malformed.value)
        assert "not one of the call channel's" in message
        assert "same golem version" in message
        shown = frame if isinstance(frame, str) else frame.decode(errors="replace")
        assert repr(shown[:20])[1:-1] in message
        assert malformed.value.http_status == 502
        # The socket it came on is closed; the next call opens another.
        again = await box.execute("true")
        assert again.exit_code == 0
        await server.closed.wait()
    assert server.closes[0] == 1002
    assert [call["op"] for call in server.calls] == ["execute", "execute"]


async def test_a_stream_ends_with_the_error_too(
    fake: tuple[FakeServer, str], config: GolemConfig
) -> None:
    server, url = fake
    server.reply = '{"id": 0, "event": {"type": "stdout"}}'
    async with RemoteEngine(url, "key", config=config) as engine, asyncio.timeout(WAIT):
        box = await engine.get_session("s1")
        with pytest.raises(MalformedFrame, match="event"):
            async for _event in box.stream("true"):
                pass


@pytest.mark.parametrize(
    "message",
    [
        CallMessage(stdin=bytes(range(256))),
        CallMessage(stdin=b""),
        CallMessage(stdin_close=True),
        CallMessage(signal=15),
        CallMessage(resize=Resize(rows=30, cols=100)),
    ],
)
def test_an_interactive_message_the_client_writes_is_what_the_server_reads(
    message: CallMessage,
) -> None:
    written = message.model_dump_json(exclude_none=True)
    assert CallMessage.model_validate_json(written) == message
