"""A run's writes to the store, in the order the runner made them, off its path.

Steps report synchronously (``Execution.emit``, ``Execution.save``: event sinks are plain
callables); the store is async. The writer keeps what they hand it in order and writes it
from one task, so events keep their order and a step never waits on the database.
``flush`` waits until everything handed in is written, and raises the first write that
failed (before anyone reads the store back: a gate, the run's end)."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable

from golem.core.errors import GolemError

__all__ = ["StoreWriter"]

log = logging.getLogger("golem.blueprint.writer")
Write = Callable[[], Awaitable[object]]


class StoreWriter:
    """Writes handed in, written one at a time in order."""

    def __init__(self) -> None:
        self._pending: collections.deque[Write] = collections.deque()
        self._task: asyncio.Future[None] | None = None
        self._failure: GolemError | None = None

    def put(self, write: Write) -> None:
        """Write this after everything handed in before."""
        self._pending.append(write)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())

    async def flush(self) -> None:
        """Wait until everything handed in is written; raise the first failed write."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def _drain(self) -> None:
        while self._pending:
            write = self._pending.popleft()
            try:
                await write()
            except GolemError as exc:  # kept for flush; later writes still go
                log.warning("a write of the run to the store failed: %s", exc.message)
                self._failure = self._failure or exc
