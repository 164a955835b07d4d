"""Requests kept pending until their thread's run ends (``store.pending``), for every source
that queues them (GitHub's and GitLab's follow-ups, Slack mentions, Linear comments): wait
for each run a pending request waits for, whichever server runs it (the store wakes the
waiter), and hand the source its requests once the run ended, oldest first. The source
starts each by claiming it in the step that keeps its run: a request starts once however
many servers see the end, and the thread's other requests then wait for the run that
started (one run at a time per thread)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from golem.blueprint import RunBook
from golem.core.errors import GolemError
from golem.store import PendingRecord, Store

__all__ = ["PendingStarts"]

log = logging.getLogger("golem.service.sources")
TRIES = 1000  # requests tried after one run's end, at most (each is one person's)
Start = Callable[[PendingRecord], Awaitable[object]]


class PendingStarts:
    """The waiters of one source's pending requests in ``store`` (a tenant's, or all of
    them: the server's own store)."""

    def __init__(self, store: Store, source: str, start: Start) -> None:
        self.store = store
        self.source = source
        self.start = start
        self._tasks: dict[str, asyncio.Task[object]] = {}

    async def keep(self, request: PendingRecord, store: Store | None = None) -> PendingRecord:
        """Keep ``request`` in its tenant's ``store`` (default: this one's) and start it
        after its run."""
        kept = await (store or self.store).pending.keep(request)
        self.after(kept.run_id)
        return kept

    def after(self, run_id: str) -> None:
        """Start the requests pending for ``run_id`` once it ends (one waiter per run)."""
        name = f"pending:{run_id}"
        if name not in self._tasks:
            self._spawn(name, self._after(run_id))

    def resume_later(self) -> None:
        """Wait, in the background, for every run the store's pending requests of this
        source wait for (a previous server's, or another server's requests)."""
        self._spawn("resume", self._resume())

    async def _resume(self, ended: str | None = None) -> None:
        """Wait for the runs pending requests wait for, but ``ended``: a request still
        waiting for it did not start now (no room in the queue, say) and is tried again
        when a server starts, not at once and for ever."""
        for request in await self.store.pending.waiting(self.source):
            if request.run_id != ended:
                self.after(request.run_id)

    async def _after(self, run_id: str) -> None:
        await self._ended(run_id)
        self._tasks.pop(f"pending:{run_id}", None)  # a request from now on waits anew
        tried: set[tuple[str, str, str, int]] = set()
        for _ in range(TRIES):  # the first starts; the store moves the rest to wait for it
            waiting = [
                request
                for request in await self.store.pending.waiting(self.source)
                if request.run_id == run_id and _seen(request) not in tried
            ]
            if not waiting:
                break
            tried.add(_seen(waiting[0]))
            try:
                await self.start(waiting[0])
            except GolemError as exc:
                log.warning("%s: a pending request of %s: %s", self.source, run_id, exc.message)
        await self._resume(ended=run_id)  # what waits for the run that started now

    async def _ended(self, run_id: str) -> None:
        """Return once ``run_id`` has ended (or is gone)."""
        book = RunBook(self.store)
        with book.watch(run_id) as changed:  # the store wakes it, whichever server runs it
            while True:
                changed.clear()
                run = await book.load(run_id)
                if run is None or run.finished:
                    return
                await changed.wait()

    def _spawn(self, name: str, work: Coroutine[Any, Any, object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[object]) -> None:
        if self._tasks.get(name) is task:
            self._tasks.pop(name)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self.source, name, exc_info=task.exception())

    async def close(self) -> None:
        """Stop waiting (the requests stay in the store for the next server)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()


def _seen(request: PendingRecord) -> tuple[str, str, str, int]:
    return (request.tenant, request.thread, request.person, request.version)
