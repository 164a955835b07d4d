"""A loopback HTTP server that answers with scripted replies and records every request.

Provider-specific servers (``AnthropicServer``, ``OpenAIServer``) build on it; tests
script what the next requests get and then assert what the SDK sent::

    with AnthropicServer() as server:
        server.push(error_reply(429, "rate_limit_error", "slow down", FAST_RETRY))
        server.push(stream_reply(Text("hello")))
        ...  # point a client at server.base_url
        assert len(server.requests) == 2

Replies are answered in the order they were pushed; when none is left, the ``otherwise``
reply (or function of the request) answers, else a 500 that says the script ran out.
Streams use chunked transfer encoding, one chunk per SSE frame, as the real APIs do.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["FAST_RETRY", "RecordedRequest", "Reply", "ReplySource", "WireServer", "sse"]

FAST_RETRY: Mapping[str, str] = {"retry-after-ms": "1"}
"""Headers that make the SDKs retry after one millisecond (Retry-After: 0 would make them
fall back to their own backoff of half a second and more)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names in lower case."""
    body: bytes
    received_at: float
    """``time.monotonic()`` when it arrived, to check how long a client waited."""

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """What to answer one request: a status, headers, and either a whole ``body`` or a
    stream of ``events`` (already formatted SSE frames, see ``sse``)."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    cut_after: int | None = None
    """For streams: drop the connection after this many events, without ending the
    chunked body (a connection that breaks mid-stream)."""
    hold_after: int | None = None
    """For streams: after this many events, send nothing more until the server's
    ``release`` event is set (a provider that stalls; ``stop`` releases it)."""

    @classmethod
    def json(
        cls, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """A JSON reply."""
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            body=json.dumps(payload).encode(),
        )

    @classmethod
    def stream(
        cls,
        events: list[bytes],
        headers: Mapping[str, str] | None = None,
        cut_after: int | None = None,
        hold_after: int | None = None,
    ) -> Reply:
        """A server-sent event stream."""
        return cls(
            headers={"content-type": "text/event-stream", **(headers or {})},
            events=tuple(events),
            cut_after=cut_after,
            hold_after=hold_after,
        )


ReplySource = Reply | Callable[[RecordedRequest], Reply]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event frame; ``data`` that is not a str is sent as JSON."""
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {text}\n\n".encode()


class WireServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 and a free port, started by ``with`` (or
    ``start``) and stopped by leaving it (or ``stop``)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        """A server context: the server speaks HTTPS (its URL says so)."""
        self.release = threading.Event()
        """Set to let replies with ``hold_after`` go on; ``stop`` sets it."""
        self._lock = threading.Lock()
        self._replies: deque[ReplySource] = deque()
        self._otherwise: ReplySource | None = None
        self._requests: list[RecordedRequest] = []
        self._httpd = _HTTPServer(self)
        # A short poll interval makes stop() quick: shutdown waits for the next poll.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https`` with ``tls``), without a path."""
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def push(self, *replies: ReplySource) -> None:
        """Answer the next requests with these replies, in order (a callable is given the
        request and returns the reply)."""
        with self._lock:
            self._replies.extend(replies)

    def otherwise(self, reply: ReplySource | None) -> None:
        """Answer with ``reply`` whenever no pushed reply is left (None: complain)."""
        with self._lock:
            self._otherwise = reply

    def start(self) -> Self:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def check(self, request: RecordedRequest) -> Reply | None:
        """A reply that refuses ``request`` before the script is consulted (wrong path,
        wrong key), or None. Provider servers override this."""
        return None

    def no_reply_left(self, request: RecordedRequest) -> Reply:
        """What to answer when the script has run out. Provider servers override this to
        answer in their error shape."""
        return Reply(status=500, body=b"wire server: no reply scripted for this request")

    def _answer(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
        refusal = self.check(request)
        if refusal is not None:
            return refusal
        with self._lock:
            source = self._replies.popleft() if self._replies else self._otherwise
        if source is None:
            return self.no_reply_left(request)
        return source(request) if callable(source) else source


class _HTTPServer(ThreadingHTTPServer):
    """The stdlib server, knowing the WireServer it answers for."""

    def __init__(self, wire: WireServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.wire = wire

    def get_request(self) -> tuple[Any, Any]:
        """The next connection; over TLS with the wire's ``tls`` (its handshake in the
        connection's own thread)."""
        connection, address = super().get_request()
        if self.wire.tls is not None:
            connection = self.wire.tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (a timed-out SDK call) or refuse the certificate are
        expected; anything else is reported as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError | ssl.SSLError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests assert on ``requests`` instead."""

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=self.rfile.read(length),
            received_at=time.monotonic(),
        )
        reply = self.server.wire._answer(request)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.events is None:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        else:
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self._send_events(reply, reply.events)

    def _send_events(self, reply: Reply, events: tuple[bytes, ...]) -> None:
        for sent, event in enumerate(events):
            if reply.cut_after is not None and sent >= reply.cut_after:
                self.close_connection = True
                return
            if sent == reply.hold_after:
                self.server.wire.release.wait()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
