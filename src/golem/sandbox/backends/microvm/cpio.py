"""cpio archives in the "newc" format, as the Linux kernel unpacks an initramfs.

The kernel unpacks archives laid end to end one after the other, so a box's own files
(its parameters, the host's read-only files) are a small archive appended to the shared one.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Entry", "cpio_archive", "directory", "regular"]

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    """One member: its path (relative, no leading slash), mode (type and permissions) and
    content."""

    name: str
    mode: int
    data: bytes = b""


def directory(name: str, mode: int = 0o755) -> Entry:
    """A directory entry."""
    return Entry(name, stat.S_IFDIR | mode)


def regular(name: str, data: bytes, mode: int = 0o644) -> Entry:
    """A regular file entry."""
    return Entry(name, stat.S_IFREG | mode, data)


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def cpio_archive(entries: Iterable[Entry]) -> bytes:
    """The archive of ``entries`` (owned by root), with its trailer."""
    out = bytearray()
    for number, entry in enumerate([*entries, Entry(TRAILER, 0)], start=1):
        if entry.name.startswith("/") or "\0" in entry.name:
            raise ValueError(f"cpio member names are relative and without NUL: {entry.name!r}")
        name = entry.name.encode() + b"\0"
        fields = (number, entry.mode, 0, 0, 1, 0, len(entry.data), 0, 0, 0, 0, len(name), 0)
        out += MAGIC + "".join(f"{value:08x}" for value in fields).encode() + name
        out += _pad(len(out))
        out += entry.data
        out += _pad(len(out))
    return bytes(out)
