"""Which processes hold a file open, read from /proc."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def held_open(name: str) -> list[str]:
    """The descriptors of every process on this machine (a box's too) open on a file
    whose path holds ``name``."""
    found = []
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        with contextlib.suppress(OSError):
            if name in os.readlink(fd):
                found.append(str(fd))
    return found
