"""Requests kept pending until their thread's run ends (``store.pending``), for every source
that queues them (GitHub's and GitLab's follow-ups and issue mentions, Slack mentions,
Linear comments): wait for each run a pending request waits for, whichever server runs it
(the store wakes the waiter), and hand the source its requests once the run ended, oldest
first. The source starts each by claiming it in the step that keeps its run: a request
starts once however many servers see the end, and the thread's other requests then wait
for the run that started (one run at a time per thread). A start that finds the run queue
full (QueueFull) is tried again when the queue has room (``store.watch(ROOM)``: a run
claimed or ended on any server sharing the store); one that finds another run of its
thread in progress waits for that run, as it was read (``wait_again``: a newer request the
person made meanwhile is never overwritten)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from golem.blueprint import RunBook
from golem.core.errors import GolemError, QueueFull
from golem.store import ROOM, PendingRecord, Store

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
        self._running: set[asyncio.Task[object]] = set()

    async def keep(self, request: PendingRecord, store: Store | None = None) -> PendingRecord:
        """Keep ``request`` in its tenant's ``store`` (default: this one's) and start it
        after its run."""
        kept = await (store or self.store).pending.keep(request)
        self.after(kept.run_id)
        return kept

    async def wait_again(
        self, request: PendingRecord, run_id: str, store: Store | None = None
    ) -> None:
        """Let ``request`` (its run ended, but ``run_id`` began in its thread before it
        could start) wait for ``run_id``, as it was read: when the person replaced it
        meanwhile, the newer request stays as it is (it waits already)."""
        if await (store or self.store).pending.wait_again(request, run_id):
            self.after(run_id)

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
        waiting for it did not start now (refused: its source forgets it unless the refusal
        may pass, as a forge away) and is tried again when a server starts, not at once and
        for ever."""
        for request in await self.store.pending.waiting(self.source):
            if request.run_id != ended:
                self.after(request.run_id)

    async def _after(self, run_id: str) -> None:
        await self._ended(run_id)
        self._tasks.pop(f"pending:{run_id}", None)  # a request from now on waits anew
        with self.store.watch(ROOM) as room:
            while True:
                room.clear()  # before the start: room freed while it fails still wakes
                if not await self._start_waiting(run_id):
                    break
                log.info("%s: requests of %s wait for room in the queue", self.source, run_id)
                await room.wait()
        await self._resume(ended=run_id)  # what waits for the run that started now

    async def _start_waiting(self, run_id: str) -> bool:
        """Start the requests that wait for ``run_id`` (ended); True when the queue was
        full (they are to be tried again when it has room)."""
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
            except QueueFull:
                return True
            except GolemError as exc:
                log.warning("%s: a pending request of %s: %s", self.source, run_id, exc.message)
        return False

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
        self._running.add(task)
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[object]) -> None:
        self._running.discard(task)
        if self._tasks.get(name) is task:
            self._tasks.pop(name)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self.source, name, exc_info=task.exception())

    async def close(self) -> None:
        """Stop waiting (the requests stay in the store for the next server)."""
        tasks = list(self._running)  # those waiting for room too, no longer by name
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._running.clear()


def _seen(request: PendingRecord) -> tuple[str, str, str, int]:
    return (request.tenant, request.thread, request.person, request.version)
