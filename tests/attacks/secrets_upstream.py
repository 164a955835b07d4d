"""An upstream that gives a brokered credential back, hidden as well as HTTP allows: a real
server on loopback (plain or TLS) whose answer to ``/case/<name>`` echoes the
``Authorization`` header it received (and, for basic auth, its decoded ``user:value``)
inside the encoding, framing, status line, header or trailer that ``<name>`` says.

One request per connection; ``seen`` keeps each Authorization value, so a test can show the
upstream did get the real credential (and a clean answer is not an empty one).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import gzip
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["DECODED", "REFUSED", "EchoUpstream", "answer"]

Builder = Callable[[bytes], bytes]
BOMB_BYTES = 96 * 1024**2


def echoed(auth: bytes) -> bytes:
    """The body every case hides: the header, its basic-auth decoding, some padding."""
    scheme, _, token = auth.partition(b" ")
    decoded = b""
    if scheme.lower() == b"basic":
        try:
            decoded = base64.b64decode(token)
        except binascii.Error:
            decoded = b"?"
    line = b'{"authorization": "' + auth + b'", "decoded": "' + decoded + b'"}\n'
    return b"padding " * 50 + line * 3


def head(status: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    lines = [b"HTTP/1.1 " + status] + [name + b": " + value for name, value in headers]
    return b"\r\n".join([*lines, b"", b""])


def sized(body: bytes, *headers: tuple[bytes, bytes], status: bytes = b"200 OK") -> bytes:
    return head(status, [*headers, (b"Content-Length", str(len(body)).encode())]) + body


def chunked(pieces: list[bytes], *headers: tuple[bytes, bytes], trailer: bytes = b"") -> bytes:
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    return (
        head(b"200 OK", [*headers, (b"Transfer-Encoding", b"chunked")])
        + chunks
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def pieces_of(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)]


@functools.cache
def bomb() -> bytes:
    """gzip in gzip of BOMB_BYTES zeros: a few hundred bytes on the wire."""
    packer = zlib.compressobj(9, wbits=16 + zlib.MAX_WBITS)
    zeros = bytes(1024**2)
    inner = b"".join(packer.compress(zeros) for _ in range(BOMB_BYTES // len(zeros)))
    return gzip.compress(inner + packer.flush())


def _gz(auth: bytes) -> bytes:
    return gzip.compress(echoed(auth))


CE = b"Content-Encoding"

DECODED: dict[str, Builder] = {
    "identity": lambda auth: sized(echoed(auth)),
    "gzip": lambda auth: sized(_gz(auth), (CE, b"gzip")),
    "x-gzip": lambda auth: sized(_gz(auth), (CE, b"x-gzip")),
    "deflate": lambda auth: sized(zlib.compress(echoed(auth)), (CE, b"deflate")),
    "raw-deflate": lambda auth: sized(raw_deflate(echoed(auth)), (CE, b"Deflate")),
    "stacked": lambda auth: sized(
        gzip.compress(zlib.compress(echoed(auth))), (CE, b"deflate, gzip")
    ),
    "stacked-headers": lambda auth: sized(
        gzip.compress(raw_deflate(echoed(auth))), (CE, b"identity, deflate"), (CE, b"gzip")
    ),
    "gzip-members": lambda auth: sized(
        gzip.compress(echoed(auth)[:420]) + gzip.compress(echoed(auth)[420:]), (CE, b"gzip")
    ),
    "chunked-gzip": lambda auth: chunked(pieces_of(_gz(auth), 7), (CE, b"gzip")),
    "reason": lambda auth: sized(b"ok", status=b"200 " + auth),
    "header": lambda auth: sized(b"ok", (b"X-Echo", auth)),
    "header-name": lambda auth: sized(b"ok", (b"X-" + auth.split()[-1], b"1")),
    "trailer": lambda auth: chunked(
        [b"see the trailer"], (b"Trailer", b"X-Echo"), trailer=b"X-Echo: " + auth + b"\r\n"
    ),
}
"""Answers the proxy decodes or cleans, then masks: the box gets them without the value."""

REFUSED: dict[str, tuple[Builder, str]] = {
    "br": (lambda auth: sized(echoed(auth), (CE, b"br")), "answer encoding 'br'"),
    "zstd": (lambda auth: sized(echoed(auth), (CE, b"zstd")), "answer encoding 'zstd'"),
    "compress": (
        lambda auth: sized(echoed(auth), (CE, b"compress")),
        "answer encoding 'compress'",
    ),
    "unknown": (
        lambda auth: sized(echoed(auth), (CE, b"golem-unheard-of")),
        "answer encoding 'golem-unheard-of'",
    ),
    "gzip-then-br": (
        lambda auth: sized(_gz(auth), (CE, b"gzip, br")),
        "answer encoding 'br'",
    ),
    "five-layers": (
        lambda auth: sized(_gz(auth), (CE, b"gzip, gzip, gzip, gzip, gzip")),
        "encoded 5 times",
    ),
    "transfer-gzip": (
        lambda auth: (
            head(b"200 OK", [(b"Transfer-Encoding", b"gzip, chunked")])
            + b"%x\r\n%s\r\n0\r\n\r\n" % (len(_gz(auth)), _gz(auth))
        ),
        "Transfer-Encoding other than chunked",
    ),
}
"""Answers the proxy cannot mask: a 502 whose text names the rule, before any byte of
them (each would hand the value over as it is)."""

CUT: dict[str, Builder] = {
    "corrupt-gzip": lambda auth: sized(b"\x1f\x8b\x08\x00" + echoed(auth), (CE, b"gzip")),
    "bomb": lambda auth: sized(bomb() + echoed(auth), (CE, b"gzip, gzip")),
}
"""Answers whose body turns out not to be decodable (or expands past the proxy's cap)
after the head went out: the proxy cuts the connection there."""


def answer(case: str, auth: bytes) -> bytes:
    """The bytes the upstream sends for ``/case/<case>``."""
    if case in DECODED:
        return DECODED[case](auth)
    if case in REFUSED:
        return REFUSED[case][0](auth)
    return CUT[case](auth)


@dataclass
class EchoUpstream:
    """The server: ``await start(address, tls)`` for each listener; ``close`` ends them."""

    seen: list[bytes] = field(default_factory=list)
    _servers: list[asyncio.Server] = field(default_factory=list)

    async def start(self, address: str, tls: ssl.SSLContext | None = None) -> int:
        """Listen on ``address`` (TLS with ``tls``); returns the port."""
        server = await asyncio.start_server(self._serve, address, 0, ssl=tls)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            lines = request.split(b"\r\n")
            case = lines[0].split(b" ")[1].rsplit(b"/", 1)[-1].decode()
            auth = b""
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"authorization":
                    auth = value.strip()
            self.seen.append(auth)
            writer.write(answer(case, auth))
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        """Stop every listener."""
        for server in self._servers:
            server.close()
            await server.wait_closed()
