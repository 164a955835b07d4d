"""A background call's output: its latest bytes within a cap, at absolute offsets."""

from __future__ import annotations


class OutputBuffer:
    """Keeps the last ``cap`` bytes written (all of them for a cap of 0).

    Offsets count every byte the call ever wrote, so a reader that continues from where it
    stopped keeps its place as the front is dropped, and learns from ``read`` where what it
    gets begins (past its offset when bytes it had not read yet were dropped).
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.start = 0
        """The offset of ``data``'s first byte: how many bytes were dropped."""

    @property
    def end(self) -> int:
        """The offset after the last byte: how many bytes were written in all."""
        return self.start + len(self.data)

    def append(self, data: bytes) -> bool:
        """Keep ``data``; True when older bytes had to be dropped for it."""
        self.data += data
        excess = len(self.data) - self.cap if self.cap else 0
        if excess <= 0:
            return False
        del self.data[:excess]
        self.start += excess
        return True

    def read(self, offset: int) -> tuple[int, bytes]:
        """Where the kept bytes from ``offset`` on begin, and those bytes."""
        begin = min(max(offset, self.start), self.end)
        return begin, bytes(self.data[begin - self.start :])
