"""Reading what a command in a pseudo-terminal wrote."""

from __future__ import annotations

import os
import select


def read_until(leader: int, marker: bytes) -> bytes:
    """What a pty's leader gave until ``marker`` (or its end, or a minute of silence)."""
    output = b""
    while marker not in output:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        output += chunk
    return output
