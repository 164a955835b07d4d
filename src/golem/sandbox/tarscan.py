"""An early look at a tar stream's headers as its bytes arrive from a box.

``takeback`` spools an archive before tarfile reads it; this scan follows the stream's
512-byte headers on the way in, so that an entry announcing a file over the cap, or a pax or
long-name header over a megabyte, is refused at its header, before gigabytes are spooled.
tarfile's reading stays the authority: the scan only refuses earlier, never accepts.
"""

from __future__ import annotations

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size

__all__ = ["HeaderScan"]

BLOCK = 512
MAX_HEADER_DATA = 1024 * 1024
REGULAR = (b"0", b"\0", b"7", b"S")
EXTENDED = (b"x", b"g", b"L", b"K")
NO_DATA = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, directories, FIFOs


class HeaderScan:
    """Feed it the stream's chunks in order; it raises ``UnsafeBoxOutput`` at the first
    header over the caps."""

    def __init__(self, max_file_bytes: int) -> None:
        self.max_file_bytes = max_file_bytes
        self._header = bytearray()
        self._skip = 0  # bytes of the current entry's data (and padding) still to pass
        self._pax: bytearray | None = None  # a pax header's records, being collected
        self._pax_size: int | None = None  # what the last pax header says the next size is

    def feed(self, chunk: bytes) -> None:
        """Look at the next bytes of the stream."""
        view = memoryview(chunk)
        while view:
            if self._skip:
                taken = view[: self._skip]
                if self._pax is not None:
                    self._pax += taken
                self._skip -= len(taken)
                view = view[len(taken) :]
                if not self._skip and self._pax is not None:
                    self._pax_size, self._pax = _pax_size(bytes(self._pax)), None
                continue
            needed = BLOCK - len(self._header)
            self._header += view[:needed]
            view = view[needed:]
            if len(self._header) == BLOCK:
                self._read_header(bytes(self._header))
                self._header.clear()

    def _read_header(self, block: bytes) -> None:
        if not any(block):
            return  # an end-of-archive block
        kind = block[156:157]
        size = _number(block[124:136])
        if self._pax_size is not None and kind not in EXTENDED:
            size, self._pax_size = self._pax_size, None
        name = block[:100].split(b"\0", 1)[0].decode("utf-8", "replace") or "(an entry)"
        if kind in EXTENDED and size > MAX_HEADER_DATA:
            raise UnsafeBoxOutput(
                name, f"a tar header of {format_size(size)} (at most 1m)", "takeback.size"
            )
        if kind in REGULAR and size > self.max_file_bytes:
            raise UnsafeBoxOutput(
                name,
                f"the box announced {format_size(size)}, over its max_file_bytes "
                f"({format_size(self.max_file_bytes)})",
                "takeback.size",
            )
        if kind == b"x":
            self._pax = bytearray()
        self._skip = 0 if kind in NO_DATA else -(-size // BLOCK) * BLOCK  # as tarfile skips


def _number(field: bytes) -> int:
    """A tar number field: octal text, or base-256 when its first bit is set."""
    if field[:1] and field[0] & 0x80:
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise UnsafeBoxOutput("(the archive)", "a tar header that is not one",
                              "takeback.kind") from None  # fmt: skip


def _pax_size(records: bytes) -> int | None:
    """The ``size`` a pax header's records set for the next entry, if any."""
    for line in records.split(b"\n"):
        _, _, record = line.partition(b" ")
        key, _, value = record.partition(b"=")
        if key == b"size":
            try:
                return int(value)
            except ValueError:
                return None
    return None
