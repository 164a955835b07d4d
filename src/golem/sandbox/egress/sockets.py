"""Raw sockets of the proxy: connecting to a checked address, taking a connection away from
asyncio's streams for splice(2), and refusing a CONNECT before any parsing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket

__all__ = ["CONNECT_TIMEOUT", "open_socket", "refuse_raw", "take_socket"]

CONNECT_TIMEOUT = 10.0


async def open_socket(address: str, port: int) -> socket.socket:
    """A non-blocking TCP connection to a checked address."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            await asyncio.get_running_loop().sock_connect(sock, (address, port))
    except BaseException:
        sock.close()
        raise
    return sock


def take_socket(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[socket.socket, bytes]:
    """Take a connection away from asyncio's transport (for splice): a duplicate of its
    socket, and what the client sent that the reader already buffered."""
    transport = writer.transport
    transport.pause_reading()  # type: ignore[attr-defined]
    # StreamReader has no public way to hand over its buffer; its attribute is stable.
    first = bytes(getattr(reader, "_buffer", b""))
    raw = writer.get_extra_info("socket")
    sock = socket.socket(fileno=os.dup(raw.fileno()))
    sock.setblocking(False)
    transport.abort()  # closes the transport's descriptor only; ours stays open
    return sock, first


async def refuse_raw(writer: asyncio.StreamWriter, status: int, rule: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 502: "Bad Gateway"}
    body = f"golem egress: refused ({rule})\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
