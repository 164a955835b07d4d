"""One status message per run, kept up to date in the thread the run was asked in, and
its end reported there once.

A source (Slack, Linear) says how to post, edit and reply (``Reporter``); the keeper does the rest
for every source alike: it watches the run in the store (woken on each change, whichever
server runs it), edits the one status message when what it shows changed (at most once per
``interval`` seconds), and when the run has ended takes the report in the store (one caller
of all the servers sharing it) and replies. A server that starts goes on with every thread
whose end is unreported (``recover_later``), adopting a status message a server posted but
did not keep, so a restart loses no report and makes none twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from golem.blueprint.book import RunBook
from golem.core.errors import GolemError
from golem.service.sources.progress import RunProgress, progress_of
from golem.store import RETRY_AFTER, Store, ThreadRecord

__all__ = ["Reporter", "StatusKeeper"]

log = logging.getLogger("golem.service.sources")


class Reporter(Protocol):
    """How a source shows a run in its thread. A failure is a GolemError: the keeper logs
    it and tries again at the run's next change."""

    source: str
    """The source's name in the store (``slack``, ``linear``)."""

    async def post_status(self, thread: ThreadRecord, progress: RunProgress) -> str:
        """Post the run's status message in ``thread``; its id (Slack: its ts)."""
        ...

    async def update_status(self, thread: ThreadRecord, status: str, progress: RunProgress) -> None:
        """Show ``progress`` in the status message ``status`` (edited in place)."""
        ...

    async def report_end(self, thread: ThreadRecord, progress: RunProgress) -> None:
        """Reply in ``thread`` how the run ended (called once per run, over all servers)."""
        ...

    async def find_status(self, thread: ThreadRecord) -> str | None:
        """The run's status message in ``thread`` if one was posted already (by a server
        that stopped before it kept it), else None."""
        ...


class StatusKeeper:
    """The status messages of one source's runs on this server."""

    def __init__(self, store: Store, reporter: Reporter, *, interval: float = 0.0) -> None:
        self.store = store
        """The server's store for all tenants (each thread is read with its tenant's)."""
        self.reporter = reporter
        self.interval = interval
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def keep(self, thread: ThreadRecord) -> None:
        """Keep ``thread``'s run's status message up to date until its end is reported."""
        if thread.run_id and thread.run_id not in self._tasks:
            self._spawn(thread.run_id, self._keep(thread))

    def recover_later(self) -> None:
        """Go on, in the background, with the threads whose end is unreported."""
        self._spawn("recover", self._recover())

    async def _recover(self) -> None:
        while True:
            try:
                threads = await self.store.threads.unreported(self.reporter.source)
            except GolemError as exc:  # the store away: try again soon
                log.warning("%s: cannot read the open threads yet: %s", self.reporter.source, exc)
                await asyncio.sleep(RETRY_AFTER)
                continue
            for thread in threads:
                if thread.run_id not in self._tasks:
                    self._spawn(thread.run_id, self._keep(thread, recovered=True))
            return

    async def _keep(self, thread: ThreadRecord, *, recovered: bool = False) -> None:
        book = RunBook(self.store.for_tenant(thread.tenant))
        status, shown = thread.status, None
        with book.watch(thread.run_id) as changed:
            while True:
                changed.clear()
                try:
                    state = await book.load(thread.run_id)
                    if state is None:
                        return  # pruned, or never this tenant's
                    progress = progress_of(state)
                    if status is None and recovered:
                        status = await self.adopt(thread)
                    if status is None:
                        status = await self._post(book, thread, progress)
                        shown = progress
                    elif progress != shown:
                        await self.reporter.update_status(thread, status, progress)
                        shown = progress
                    if progress.finished:
                        await self._report(book, thread, progress)
                        return
                except GolemError as exc:  # Slack or the store away: again at the next change
                    log.warning("%s: run %s: %s", self.reporter.source, thread.run_id, exc)
                    await changed.wait(RETRY_AFTER)
                    continue
                await changed.wait()
                if self.interval:
                    await asyncio.sleep(self.interval)  # a rate limit of the source's API

    async def adopt(self, thread: ThreadRecord) -> str | None:
        """The status message a server posted for the thread's run but did not keep (it
        stopped in between), found in the thread and kept now; None: there is none."""
        found = await self.reporter.find_status(thread)
        if found is None:
            return None
        store = self.store.for_tenant(thread.tenant)
        if await store.threads.set_status(thread.run_id, found):
            return found
        kept = await store.threads.of_run(self.reporter.source, thread.run_id)
        return kept.status if kept is not None else found

    async def _post(self, book: RunBook, thread: ThreadRecord, progress: RunProgress) -> str:
        """Post the status message and keep it; another server's, kept first, wins."""
        posted = await self.reporter.post_status(thread, progress)
        if await book.store.threads.set_status(thread.run_id, posted):
            return posted
        kept = await book.store.threads.of_run(self.reporter.source, thread.run_id)
        return kept.status if kept is not None and kept.status is not None else posted

    async def _report(self, book: RunBook, thread: ThreadRecord, progress: RunProgress) -> None:
        if await book.store.threads.report(thread.run_id):
            await self.reporter.report_end(thread, progress)

    def _spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))

    def _finished(self, name: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(name) is task:
            self._tasks.pop(name)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed", self.reporter.source, name, exc_info=task.exception())

    async def close(self) -> None:
        """Stop keeping (a restarted server goes on where this one stopped)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
