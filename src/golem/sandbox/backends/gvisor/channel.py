"""The supervisor's channel for a gVisor box: a unix socket pair as the container's stdin
and stdout (and another as its stderr), never pipes.

gVisor lets a process of the box open /proc/1/fd/N of its pid 1 (the supervisor) whatever
its dumpable flag says, and opening a pipe's entry there gives a new end of that pipe: a
box process could read the host's requests and write answers of its own. A socket cannot
be opened through /proc (ENXIO), so the channel stays the supervisor's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass

from golem.sandbox.backends.process.channel import FirstDataProtocol

__all__ = ["HostStreams", "SocketChannel"]


@dataclass
class SocketChannel:
    """Two socket pairs: the channel, and runsc's stderr. The box's ends go to runsc."""

    host: socket.socket
    box: socket.socket
    host_stderr: socket.socket
    box_stderr: socket.socket

    @classmethod
    def create(cls) -> SocketChannel:
        """Fresh socket pairs (close-on-exec; runsc gets the box's ends as its stdio)."""
        host, box = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        host_stderr, box_stderr = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return cls(host, box, host_stderr, box_stderr)

    def close_box_ends(self) -> None:
        """After runsc started, the host must not hold the box's ends open."""
        self.box.close()
        self.box_stderr.close()

    def close_all(self) -> None:
        """Give up every end (a start that failed)."""
        for end in (self.host, self.box, self.host_stderr, self.box_stderr):
            with contextlib.suppress(OSError):
                end.close()

    async def host_streams(self, on_first_data: Callable[[], None] | None = None) -> HostStreams:
        """asyncio streams over the host's ends: the channel's reader and writer, and
        runsc's stderr; ``on_first_data`` is called when the box first says something."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        self.host.setblocking(False)
        transport, protocol = await loop.create_connection(
            lambda: FirstDataProtocol(reader, on_first_data), sock=self.host
        )
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        self.host_stderr.setblocking(False)
        stderr = asyncio.StreamReader(limit=1 << 16)
        stderr_transport, _ = await loop.create_connection(
            lambda: asyncio.StreamReaderProtocol(stderr), sock=self.host_stderr
        )
        return HostStreams(reader, writer, stderr, stderr_transport)


@dataclass
class HostStreams:
    """The host's side of a gVisor box's stdio."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    stderr: asyncio.StreamReader
    stderr_transport: asyncio.BaseTransport

    def close(self) -> None:
        """Close both sockets (the box sees its channel end)."""
        with contextlib.suppress(Exception):
            self.writer.close()
        self.stderr_transport.close()
