"""Waiting for what a server does after it has answered (a comment, a post), by polling
the loopback service's record up to a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
WAIT = 60.0


def eventually(probe: Callable[[], T | None], what: str) -> T:
    """``probe()``'s first answer that is not None (polled, at most WAIT seconds)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = probe()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"{what}: still not so after {WAIT}s"
        time.sleep(0.05)  # a poll of the loopback service's record, not a wait for a result
