"""A strict look at a tar stream's headers as its bytes arrive from a box.

``takeback`` spools an archive before tarfile reads it; this scan follows the stream's
512-byte headers on the way in and refuses, at the header, what tarfile would otherwise
parse at length or what golem's own supervisor never sends:

- an entry announcing a file over the cap (before gigabytes are spooled);
- a pax or GNU long-name header over 1 MiB, more than one of a kind before an entry, a
  global pax header (``g``), a pax key outside the plain ones tarfile writes (no
  ``GNU.sparse.*``), a pax record that is not ``LENGTH key=value\\n``;
- a sparse entry (``S``), a type tarfile does not know, a negative or malformed number.

The scan runs on the worker thread that spools, never on the event loop. tarfile reading
the spooled archive stays the authority: the scan only refuses earlier, never accepts.
"""

from __future__ import annotations

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size

__all__ = ["HeaderScan"]

BLOCK = 512
MAX_HEADER_DATA = 1024 * 1024
DATA_TYPES = (b"0", b"\0", b"7")  # entries whose data follows their header
NO_DATA_TYPES = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, directories, FIFOs
EXTENDED_TYPES = (b"x", b"L", b"K")
PAX_KEYS = frozenset(
    {
        b"path",
        b"linkpath",
        b"size",
        b"mtime",
        b"atime",
        b"ctime",
        b"uid",
        b"gid",
        b"uname",
        b"gname",
        b"hdrcharset",
    }
)
PAX_NUMBERS = frozenset({b"size", b"uid", b"gid"})


def _refuse(what: str, rule: str = "takeback.kind", name: str = "(the archive)") -> None:
    raise UnsafeBoxOutput(name, what, rule)


class HeaderScan:
    """Feed it the stream's chunks in order; it raises ``UnsafeBoxOutput`` at the first
    header it refuses."""

    def __init__(self, max_file_bytes: int, limit: str | None = None) -> None:
        self.max_file_bytes = max_file_bytes
        self.limit = limit or f"its max_file_bytes ({format_size(max_file_bytes)})"
        """The cap, as a refusal names it."""
        self._header = bytearray()
        self._skip = 0  # bytes of the current entry's data (and padding) still to pass
        self._pax: bytearray | None = None  # a pax header's records, being collected
        self._pax_size: int | None = None  # the size the last pax header gives the next entry
        self._extended: set[bytes] = set()  # extended headers seen since the last entry

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
                continue
            if self._pax is not None:
                self._pax_size, self._pax = _pax_size(bytes(self._pax)), None
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
        name = block[:100].split(b"\0", 1)[0].decode("utf-8", "replace") or "(an entry)"
        size = _number(block[124:136])
        if kind in EXTENDED_TYPES:
            if kind in self._extended:
                _refuse(f"two {kind.decode()} headers before one entry", name=name)
            if size > MAX_HEADER_DATA:
                _refuse(f"a tar header of {format_size(size)} (at most 1m)", "takeback.size", name)
            self._extended.add(kind)
            self._pax = bytearray() if kind == b"x" else None
            self._skip = _padded(size)
            return
        if kind not in DATA_TYPES + NO_DATA_TYPES:
            _refuse(
                f"a tar entry of type {kind!r} (a sparse file, a global header, ...)", name=name
            )
        if self._pax_size is not None:
            size, self._pax_size = self._pax_size, None
        self._extended.clear()
        if kind in DATA_TYPES and size > self.max_file_bytes:
            _refuse(
                f"the box announced {format_size(size)}, over {self.limit}", "takeback.size", name
            )
        self._skip = _padded(size) if kind in DATA_TYPES else 0  # as tarfile skips


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _number(field: bytes) -> int:
    """A tar number field: octal text, or base-256 (first byte 0x80); a negative one
    (0xff) or one that is neither is refused."""
    if field[:1] == b"\x80":
        return int.from_bytes(field[1:], "big")
    if field[:1] and field[0] & 0x80:
        _refuse("a negative number in a tar header")
    text = field.split(b"\0", 1)[0].strip()
    if text and not all(digit in b"01234567" for digit in text):
        _refuse("a tar header that is not one")
    return int(text, 8) if text else 0


def _pax_size(records: bytes) -> int | None:
    """The ``size`` a pax header's records give the next entry, if any; each record read
    by its length, as tarfile reads it."""
    size = None
    position = 0
    while position < len(records) and records[position] != 0:
        space = records.find(b" ", position)
        length_text = records[position:space] if space > position else b""
        if not length_text.isdigit():
            _refuse("a pax record that is not 'LENGTH key=value'")
        end = position + int(length_text)
        record = records[space + 1 : end]
        if end > len(records) or int(length_text) <= space - position or not record.endswith(b"\n"):
            _refuse("a pax record whose length is wrong")
        key, equals, value = record[:-1].partition(b"=")
        if not equals or key not in PAX_KEYS:
            _refuse(f"a pax key golem does not take ({key[:40]!r})")
        if key in PAX_NUMBERS and not value.isdigit():
            _refuse(f"a pax {key.decode()} that is not a decimal number")
        if key == b"size":
            size = int(value)
        position = end
    return size
