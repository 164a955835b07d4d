"""HTTP/1.1 relaying through the proxy, parsed by h11 on both sides.

Plain-HTTP requests and the requests inside a terminated TLS tunnel pass through here one
at a time: each is decided, its headers rewritten (credentials in, proxy headers out), its
body streamed upstream, and the answer streamed back with real credential values masked:
in the status line, header names and values, and the body (decoded first when the
upstream encoded it; trailers are dropped). An answer the proxy cannot mask gets a 502
that names the rule, before anything of it reaches the box.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import struct
from collections.abc import Iterable
from dataclasses import dataclass

import h11

from golem.core.errors import Unmaskable
from golem.core.masking import SecretMasker
from golem.sandbox.egress.answers import AnswerDecoder, answer_decoder
from golem.sandbox.egress.broker import Brokered, response_masker, rewrite_request_headers

__all__ = [
    "HttpSide",
    "Route",
    "Traffic",
    "Upstream",
    "end_stream",
    "ready_upstream",
    "relay",
    "reset_stream",
    "send_error",
]

CHUNK = 256 * 1024
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 10.0
CLOSE_GRACE = 5.0
ENDED_STATES = frozenset({h11.IDLE, h11.DONE, h11.MUST_CLOSE, h11.CLOSED})
HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"proxy-authenticate",
    b"proxy-authorization",
    b"te",
    b"trailer",
    b"upgrade",
}
ENCODING_HEADERS = {b"content-encoding", b"content-length"}
UNREADABLE = (
    "upstream answer is not HTTP/1.1 the proxy can relay (malformed, or a Transfer-Encoding "
    "other than chunked)"
)
log = logging.getLogger(__name__)
RESET_ON_CLOSE = struct.pack("ii", 1, 0)  # SO_LINGER on, zero seconds


class HttpSide:
    """One end of a relayed exchange: a stream pair and its h11 state machine."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        role: type[h11.CLIENT] | type[h11.SERVER],
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(role, max_incomplete_event_size=MAX_HEAD)
        self.at: Upstream | None = None  # for a connection to an upstream: where it goes

    async def next_event(self) -> object:
        """The next parsed event (an h11 event, or ``h11.PAUSED``), reading as needed;
        h11's protocol errors propagate."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.reader.read(CHUNK))

    def serialise(self, event: h11.Event) -> bytes:
        """The bytes of an event (count them before writing: a reader may act at once)."""
        return self.h11.send(event) or b""

    async def write(self, data: bytes) -> None:
        """Write bytes and wait until the buffer drains."""
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, event: h11.Event) -> None:
        """Serialise and write an event."""
        await self.write(self.serialise(event))

    def reusable(self) -> bool:
        """Whether another exchange may follow on this connection."""
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    async def drop(self, *, waited_on: bool = False) -> None:
        """End the connection: politely after whole exchanges, reset mid-exchange. A TLS
        connection a box's next request waits on (``waited_on``) is reset too: a polite
        end waits for the upstream's close_notify."""
        ended = self.h11.our_state in ENDED_STATES
        tls = self.at is not None and self.at.tls is not None
        await end_stream(self.writer, politely=ended and not (waited_on and tls))


async def end_stream(writer: asyncio.StreamWriter, *, politely: bool) -> None:
    """Close a connection and wait until its socket is closed: a close still pending when
    the event loop stops leaks the socket (TLS waits for the peer's close_notify first).
    A polite close that the peer does not complete within ``CLOSE_GRACE`` is reset, as is
    any other: unsent bytes dropped, nothing left for the kernel to go on offering a
    stalled peer for minutes."""
    if politely:
        writer.close()
        try:
            async with asyncio.timeout(CLOSE_GRACE):
                await writer.wait_closed()
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            reset_stream(writer)
            raise
        except Exception:  # the connection ended with an error: its socket is closed
            return
        else:
            return
    reset_stream(writer)
    with contextlib.suppress(Exception):
        await writer.wait_closed()


def reset_stream(writer: asyncio.StreamWriter) -> None:
    """Start resetting a connection: unsent bytes dropped, no lingering in the kernel."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
    writer.transport.abort()


@dataclass
class Traffic:
    """Bytes moved on a logged connection, box to upstream and back."""

    up: int = 0
    down: int = 0


@dataclass(frozen=True)
class Upstream:
    """Where an exchange goes: the checked address, and TLS with the name it verifies."""

    address: str
    port: int
    host: str
    tls: ssl.SSLContext | None

    @property
    def authority(self) -> str:
        """``host`` or ``host:port`` as the Host header spells it."""
        default = 443 if self.tls is not None else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    async def connect(self) -> HttpSide:
        """Open a connection (TLS verified against ``host``)."""
        async with asyncio.timeout(CONNECT_TIMEOUT):
            reader, writer = await asyncio.open_connection(
                self.address,
                self.port,
                ssl=self.tls,
                server_hostname=self.host if self.tls is not None else None,
                limit=CHUNK,
            )
        side = HttpSide(reader, writer, h11.CLIENT)
        side.at = self
        return side


@dataclass
class Route:
    """Where one plain-HTTP request from a box goes: the upstream, the request target,
    the credentials applied, and the counter of its bytes."""

    upstream: Upstream
    target: bytes
    applied: list[Brokered]
    traffic: Traffic


async def ready_upstream(upstream: HttpSide | None, upstream_at: Upstream) -> HttpSide:
    """The open upstream connection when it can take another request, else a new one."""
    if upstream is not None and upstream.reusable():
        upstream.h11.start_next_cycle()
        return upstream
    if upstream is not None:
        await upstream.drop(waited_on=True)
    return await upstream_at.connect()


async def send_error(box: HttpSide, status: int, text: str) -> None:
    """Answer the box with an error and make the connection close afterwards."""
    body = f"golem egress: {text}\n".encode()
    headers = [
        (b"Content-Type", b"text/plain"),
        (b"Content-Length", str(len(body)).encode()),
        (b"Connection", b"close"),
    ]
    with contextlib.suppress(h11.LocalProtocolError, ConnectionError):
        await box.send(h11.Response(status_code=status, headers=headers))
        await box.send(h11.Data(data=body))
        await box.send(h11.EndOfMessage())


async def relay(
    box: HttpSide,
    request: h11.Request,
    target: bytes,
    upstream: HttpSide,
    upstream_at: Upstream,
    applied: list[Brokered],
    traffic: Traffic,
) -> None:
    """One request from the box to the upstream and its answer back, counted in
    ``traffic`` as it goes."""
    headers = rewrite_request_headers(
        [(k, v) for k, v in request.headers.raw_items() if k.lower() not in HOP_BY_HOP],
        applied,
        upstream_at.authority,
    )
    request_head = h11.Request(method=request.method, target=target, headers=headers)
    await _upward(upstream, request_head, traffic)
    if box.h11.they_are_waiting_for_100_continue:
        await box.send(h11.InformationalResponse(status_code=100, headers=[]))
    while True:
        event = await box.next_event()
        if isinstance(event, h11.Data):
            await _upward(upstream, h11.Data(data=event.data), traffic)
        elif isinstance(event, h11.EndOfMessage):
            await _upward(upstream, h11.EndOfMessage(), traffic)
            break
        else:
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} in a request")
    await _answer(box, upstream, applied, traffic, upstream_at.host)


async def _answer(
    box: HttpSide, upstream: HttpSide, applied: list[Brokered], traffic: Traffic, host: str
) -> None:
    masker = response_masker(applied)
    decoder: AnswerDecoder | None = None
    while True:
        try:
            event = await upstream.next_event()
        except h11.RemoteProtocolError:
            if box.h11.our_state is not h11.SEND_RESPONSE:
                raise
            await _refuse(box, host, UNREADABLE)  # h11's text may quote the upstream
            return
        if isinstance(event, h11.InformationalResponse):
            continue  # the proxy answered any 100-continue itself
        if isinstance(event, h11.Response):
            try:
                response, decoder = _head(event, masker)
            except Unmaskable as refused:
                await _refuse(box, host, refused.rule)
                return
            await _downward(box, response, traffic)
        elif isinstance(event, h11.Data):
            data = bytes(event.data)
            await _body(box, masker, decoder.feed(data) if decoder else [data], traffic, host)
        elif isinstance(event, h11.EndOfMessage):
            await _body(box, masker, decoder.flush() if decoder else [], traffic, host)
            if tail := masker.flush():
                await _downward(box, h11.Data(data=tail), traffic)
            await _downward(box, h11.EndOfMessage(), traffic)  # trailers are dropped
            return
        else:
            raise h11.RemoteProtocolError("the upstream closed the connection mid-answer")


def _head(event: h11.Response, masker: SecretMasker) -> tuple[h11.Response, AnswerDecoder | None]:
    """The answer's head as the box gets it, and the decoder its body needs (a brokered
    answer only: a masker without secrets has nothing to look for)."""
    headers = list(event.headers)
    decoder = answer_decoder(headers, masker) if masker else None
    dropped = HOP_BY_HOP | ENCODING_HEADERS if decoder else HOP_BY_HOP
    kept = [(masker.mask(k), masker.mask(v)) for k, v in headers if k.lower() not in dropped]
    reason = masker.mask(bytes(event.reason))
    return h11.Response(status_code=event.status_code, headers=kept, reason=reason), decoder


async def _body(
    box: HttpSide, masker: SecretMasker, pieces: Iterable[bytes], traffic: Traffic, host: str
) -> None:
    """Mask and send pieces of a body; a body that cannot be decoded ends the connection
    (its head is gone already, so there is no refusing it)."""
    try:
        for piece in pieces:
            if masked := masker.feed(piece):
                await _downward(box, h11.Data(data=masked), traffic)
    except Unmaskable as refused:
        log.warning("egress: cut off an answer from %s: %s", host, refused.rule)
        raise h11.RemoteProtocolError(refused.rule) from None


async def _refuse(box: HttpSide, host: str, rule: str) -> None:
    log.warning("egress: refused an answer from %s: %s", host, rule)
    await send_error(box, 502, f"refused ({rule})")


async def _upward(upstream: HttpSide, event: h11.Event, traffic: Traffic) -> None:
    data = upstream.serialise(event)
    traffic.up += len(data)
    await upstream.write(data)


async def _downward(box: HttpSide, event: h11.Event, traffic: Traffic) -> None:
    data = box.serialise(event)
    traffic.down += len(data)
    await box.write(data)
