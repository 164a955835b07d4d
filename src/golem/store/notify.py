"""Change notification: who waits on a run (its runner, a gate, an SSE follower) or on the
queue (idle workers) is woken when it changes, instead of reading the store on a timer.

Within one process a ``Hub`` wakes the waiters directly, right after the change is
committed. Stores on PostgreSQL also send each change with ``NOTIFY``, and a listener
connection per process hands what other processes (servers, ``golem runs cancel``) send
to its hub. A notification can still be lost (the listener's connection dropped and was
remade; a SQLite file written by another process): waiters read the store again after
``RECHECK`` seconds at the latest, which bounds what such a loss costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator

__all__ = [
    "CHANNEL",
    "QUEUE",
    "RECHECK",
    "RESUME",
    "ROOM",
    "Hub",
    "Signal",
    "control_key",
    "documents_key",
]

log = logging.getLogger("golem.store.notify")
QUEUE = "*queue"
"""The key of the queue: a run was queued (run ids never begin with ``*``)."""
RESUME = "*resume"
"""The key of paused runs: one was paused (its resume time is new)."""
ROOM = "*room"
"""The key of the queue's room: a run left it (claimed, cancelled before its start) or
ended, so a run refused for want of room (QueueFull) may fit now."""
CHANNEL = "golem_changes"
"""PostgreSQL's channel for changes; a notification's payload is the key."""


def control_key(run_id: str) -> str:
    """The key of a run's control: a cancel request or a gate's answer (its state and
    events are announced under the run's id)."""
    return f"*control:{run_id}"


def documents_key(kind: str) -> str:
    """The key of the store's documents of ``kind`` (automations, loops...): one of them
    was made, changed or deleted."""
    return f"*documents:{kind}"


RECHECK = 30.0
"""Seconds a waiter waits at most before it reads the store again (lost notifications)."""


class Signal:
    """Set when what it watches changed; clear it, read the store, then wait."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def clear(self) -> None:
        """Forget earlier changes (do this before reading the store)."""
        self._event.clear()

    def is_set(self) -> bool:
        """Whether a change came since the last ``clear``."""
        return self._event.is_set()

    async def wait(self, timeout: float = RECHECK) -> bool:
        """Wait for a change, ``timeout`` seconds at most; False if none came."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._event.wait()
            return True
        return False

    def _set(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits
            self._loop.call_soon_threadsafe(self._event.set)


class Hub:
    """The waiters of one process, by key (a run id, or ``QUEUE``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # notifications may come from other threads
        self._waiters: dict[str, set[Signal]] = {}

    @contextlib.contextmanager
    def watch(self, key: str) -> Iterator[Signal]:
        """A signal set whenever ``key`` changes, while the block runs."""
        signal = Signal()
        with self._lock:
            self._waiters.setdefault(key, set()).add(signal)
        try:
            yield signal
        finally:
            with self._lock:
                waiting = self._waiters.get(key, set())
                waiting.discard(signal)
                if not waiting:
                    self._waiters.pop(key, None)

    def notify(self, key: str) -> None:
        """Wake whoever watches ``key``."""
        with self._lock:
            waiting = list(self._waiters.get(key, ()))
        for signal in waiting:
            signal._set()

    def notify_all(self) -> None:
        """Wake every waiter (after notifications may have been lost)."""
        with self._lock:
            waiting = [signal for signals in self._waiters.values() for signal in signals]
        for signal in waiting:
            signal._set()
