"""Files written with their runs of zero bytes left as holes.

A box's sparse file (``truncate -s 50G``) says far more than the box ever held; written
byte for byte, its zeros would cost the host that much disk. Every file the host writes
from a box's bytes (the spooled archive, a landed file, the dependency cache's archive)
goes through ``SparseWriter``, which seeks over each block of zeros instead of writing it,
so what the host's disk holds is what the box's did.
"""

from __future__ import annotations

import os

__all__ = ["SparseWriter"]

BLOCK = 4096  # a file system block: the unit a hole is made of
ZEROS = bytes(BLOCK)


class SparseWriter:
    """Writes a new, empty file from its start through its descriptor (by position: the
    descriptor's own offset is not moved), leaving every block of zeros (aligned to the
    file's blocks) unwritten; ``finish`` gives the file its length. File-like enough for
    tarfile (``write``, ``tell``, ``flush``)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.position = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the current position; returns its length."""
        chunk = bytes(data)
        start = 0
        while start < len(chunk):
            end = min(len(chunk), start + BLOCK - (self.position + start) % BLOCK)
            if chunk[start:end] == ZEROS[: end - start]:
                start = end
                continue
            while end < len(chunk):  # the whole run of blocks that hold data, in one write
                following = min(len(chunk), end + BLOCK)
                if chunk[end:following] == ZEROS[: following - end]:
                    break
                end = following
            self._write_at(memoryview(chunk)[start:end], self.position + start)
            start = end
        self.position += len(chunk)
        return len(chunk)

    def _write_at(self, data: memoryview, offset: int) -> None:
        while data:
            written = os.pwrite(self.fd, data, offset)
            data, offset = data[written:], offset + written

    def tell(self) -> int:
        """How many bytes were written (holes included)."""
        return self.position

    def flush(self) -> None:
        """Nothing is buffered."""

    def finish(self) -> None:
        """Give the file its length (a file that ends in zeros ends in a hole)."""
        os.ftruncate(self.fd, self.position)
