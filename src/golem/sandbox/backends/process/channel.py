"""The supervisor's channel for a process box: two pipes, on descriptors of their own.

They are not bubblewrap's stdin and stdout: the box's pid 1 (bubblewrap's init) keeps
fds 0-2, and box processes can write that process's memory, so it must not hold the
channel. bubblewrap's init closes every other descriptor; only the supervisor keeps these.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FirstDataProtocol", "PipeChannel"]


@dataclass
class PipeChannel:
    """Both pipes; the box's ends are passed to bubblewrap, the host's become streams."""

    box_reads: int
    host_writes: int
    host_reads: int
    box_writes: int

    @classmethod
    def create(cls) -> PipeChannel:
        """Two fresh pipes (close-on-exec; ``pass_fds`` hands the box's ends over)."""
        box_reads, host_writes = os.pipe()
        host_reads, box_writes = os.pipe()
        return cls(box_reads, host_writes, host_reads, box_writes)

    @property
    def box_fds(self) -> list[int]:
        """Descriptors the box inherits: (read, write)."""
        return [self.box_reads, self.box_writes]

    def close_box_ends(self) -> None:
        """After the box started, the host must not hold the box's ends open."""
        for fd in self.box_fds:
            os.close(fd)

    def close_all(self) -> None:
        """Give up every end (a start that failed)."""
        for fd in (self.box_reads, self.host_writes, self.host_reads, self.box_writes):
            with contextlib.suppress(OSError):
                os.close(fd)

    async def host_streams(
        self, on_first_data: Callable[[], None] | None = None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """asyncio streams over the host's ends; ``on_first_data`` is called when the box
        first says something (its supervisor's hello: the box has booted)."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(
            lambda: FirstDataProtocol(reader, on_first_data), os.fdopen(self.host_reads, "rb", 0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(self.host_writes, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return reader, writer


class FirstDataProtocol(asyncio.StreamReaderProtocol):
    """A stream reader's protocol that calls back once, on the first bytes."""

    def __init__(
        self, reader: asyncio.StreamReader, on_first_data: Callable[[], None] | None
    ) -> None:
        super().__init__(reader)
        self._on_first_data = on_first_data

    def data_received(self, data: bytes) -> None:
        if self._on_first_data is not None:
            callback, self._on_first_data = self._on_first_data, None
            callback()
        super().data_received(data)
