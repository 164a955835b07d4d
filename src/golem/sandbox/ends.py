"""Sessions whose box ended by itself (its supervisor gone, killed or removed from outside,
reaped at its age limit): who is told, and the stops of their boxes still running."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["SessionEnds"]


class SessionEnds:
    """Tells every listener of a session whose box ended, and tracks its box's stop."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[str, str], None]] = []
        self._stopping: dict[str, asyncio.Task[None]] = {}

    def listen(self, callback: Callable[[str, str], None]) -> None:
        """Have ``callback(box_id, why)`` called for each session that ends by itself."""
        self._listeners.append(callback)

    def ended(self, box_id: str, why: str, stop: Coroutine[Any, Any, None] | None = None) -> None:
        """A session's box ended; ``stop`` (run as a task) stops what is left of it."""
        if stop is not None:
            task = asyncio.get_running_loop().create_task(stop)
            self._stopping[box_id] = task
            task.add_done_callback(lambda _: self._stopping.pop(box_id, None))
        for callback in self._listeners:
            callback(box_id, why)

    async def stopped(self, box_id: str) -> bool:
        """Wait for the stop of an ended session's box; False when there is none."""
        task = self._stopping.get(box_id)
        if task is None:
            return False
        await asyncio.shield(task)
        return True

    async def drain(self) -> None:
        """Wait for every stop still running."""
        await asyncio.gather(*self._stopping.values(), return_exceptions=True)
