"""A run's writes to the store, in the order the runner made them, off its path.

Steps report synchronously (``Execution.emit``, ``Execution.save``: event sinks are plain
callables); the store is async. The writer keeps what they hand it in order and writes it
from one task, so events keep their order and a step never waits on the database.
``flush`` waits until everything handed in is written, and raises the first write that
failed (before anyone reads the store back: a gate, the run's end).

A write the store could not make because the database is away (``StoreUnavailable``) is
tried again, paused, until the database is back: the run waits at its next flush and then
goes on, and its end is kept whatever the outage's length (each write the runner makes is
one the store may repeat: a run's state is replaced, a repeated event is kept once).

A write refused because the run was claimed again (``RunTaken``) drops what waits after
it: every later write of this runner would be refused as well."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable

from golem.core.errors import GolemError, RunTaken, StoreUnavailable

__all__ = ["StoreWriter"]

log = logging.getLogger("golem.blueprint.writer")
Write = Callable[[], Awaitable[object]]
FIRST_PAUSE, LAST_PAUSE = 0.5, 5.0  # seconds between tries of a write while the store is away


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
                await _until_kept(write)
            except RunTaken as exc:
                log.warning("the run's writes stop: %s", exc.message)
                self._pending.clear()
                self._failure = self._failure or exc
            except GolemError as exc:  # kept for flush; later writes still go
                log.warning("a write of the run to the store failed: %s", exc.message)
                self._failure = self._failure or exc


async def _until_kept(write: Write) -> None:
    """Make ``write``, trying again while the database is away."""
    pause = FIRST_PAUSE
    while True:
        try:
            await write()
        except StoreUnavailable as exc:
            log.warning("the store is away; the run's write waits for it: %s", exc.message)
        else:
            return
        await asyncio.sleep(pause)  # a back-off while the database is away
        pause = min(pause * 2, LAST_PAUSE)
