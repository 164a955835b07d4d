"""A container's attach stream as asyncio streams for the supervisor's channel.

Without a TTY, Docker multiplexes the attach stream: each chunk of output carries an 8-byte
header (stream type, 3 zero bytes, big-endian length). Input goes to the socket as is.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

__all__ = ["AttachedStreams", "open_attach"]

HEADER = struct.Struct(">BxxxL")
STDOUT = 1


class AttachedStreams:
    """The supervisor's channel over an attach socket: demultiplexed reader, raw writer."""

    def __init__(self, raw_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = asyncio.StreamReader(limit=1 << 20)
        self.writer = writer
        self._pump = asyncio.create_task(self._demultiplex(raw_reader))

    async def _demultiplex(self, raw: asyncio.StreamReader) -> None:
        try:
            while True:
                header = await raw.readexactly(HEADER.size)
                kind, size = HEADER.unpack(header)
                payload = await raw.readexactly(size)
                if kind == STDOUT:
                    self.reader.feed_data(payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.reader.feed_eof()

    async def close(self) -> None:
        """Close the socket and stop reading."""
        with contextlib.suppress(Exception):
            self.writer.close()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump


async def open_attach(attach_socket: Any) -> AttachedStreams:
    """Take over the socket the Docker SDK returns from ``attach_socket``.

    Its descriptor moves to a socket that asyncio owns and closes; the SDK's wrappers are
    left detached, so nothing closes (or leaks) the connection twice.
    """
    sdk_socket: socket.socket = getattr(attach_socket, "_sock", attach_socket)
    owned = socket.socket(fileno=sdk_socket.detach())
    with contextlib.suppress(Exception):
        attach_socket.close()
    owned.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=owned, limit=1 << 20)
    return AttachedStreams(reader, writer)
