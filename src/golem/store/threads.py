"""The threads chat and tracker sources asked for runs in (a Slack thread, a Linear issue),
in golem's store: one row per run, kept in the transaction that keeps the run
(``store.runs.create``), with the message that shows the run's progress there and when its
end was reported. A server that starts goes on with the threads whose end is unreported; a
later request in a thread finds the thread's runs; the end is reported once whichever
servers share the store (a conditional update decides who reports it)."""

from __future__ import annotations

import time
from typing import Any, Protocol

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.store.bounds import bounded
from golem.store.records import ThreadRecord
from golem.store.repository import MemoryRepository, SqlRepository
from golem.store.schema import source_threads

__all__ = ["MemoryThreads", "SqlThreads", "Threads", "keep_thread"]

_TABLE = source_threads.c


class Threads(Protocol):
    """Where chat and tracker sources asked for runs (``store.threads``)."""

    async def runs_in(self, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in a source's ``thread``, newest first."""
        ...

    async def of_run(self, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        ...

    async def unreported(self, source: str) -> list[ThreadRecord]:
        """The runs of ``source`` whose end is not reported yet, oldest first."""
        ...

    async def set_status(self, run_id: str, status: str) -> bool:
        """Keep the message that shows the run's progress, unless one is kept already."""
        ...

    async def report(self, run_id: str) -> bool:
        """Take the report of the run's end: True once, for one caller of any process."""
        ...

    async def prune(self, before: float) -> int:
        """Forget the threads of runs whose end was reported before ``before``."""
        ...


async def keep_thread(
    db: AsyncConnection, tenant: str, thread: ThreadRecord, run_id: str, created: float
) -> None:
    """Record ``thread`` as where ``run_id`` was asked for, within the caller's write
    transaction."""
    await db.execute(
        insert(source_threads).values(
            run_id=run_id,
            tenant=tenant,
            source=thread.source,
            thread=thread.thread,
            status=thread.status,
            detail=thread.detail,
            created=created,
            reported=None,
        )
    )


def _record(row: Any) -> ThreadRecord:
    return ThreadRecord(
        source=row.source,
        thread=row.thread,
        run_id=row.run_id,
        tenant=row.tenant,
        status=row.status,
        detail=row.detail,
        created=row.created,
        reported=row.reported,
    )


@bounded(
    retried={"runs_in", "of_run", "unreported", "prune"},
    once={"set_status", "report"},
)
class SqlThreads(SqlRepository):
    """Source threads in SQL."""

    async def runs_in(self, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in ``thread`` (this tenant's), newest first."""
        async with self.transaction() as db:
            rows = await db.execute(
                select(source_threads)
                .where(self._mine(source_threads), _TABLE.source == source, _TABLE.thread == thread)
                .order_by(_TABLE.created.desc())
            )
        return [_record(row) for row in rows]

    async def of_run(self, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        mine = self._mine(source_threads)
        found = select(source_threads).where(mine, _TABLE.source == source, _TABLE.run_id == run_id)
        async with self.transaction() as db:
            row = (await db.execute(found)).first()
        return _record(row) if row is not None else None

    async def unreported(self, source: str) -> list[ThreadRecord]:
        """The runs of ``source`` whose end is not reported yet, oldest first."""
        async with self.transaction() as db:
            rows = await db.execute(
                select(source_threads)
                .where(
                    self._mine(source_threads), _TABLE.source == source, _TABLE.reported.is_(None)
                )
                .order_by(_TABLE.created)
            )
        return [_record(row) for row in rows]

    async def set_status(self, run_id: str, status: str) -> bool:
        """Keep ``status`` as the message showing the run's progress, unless one is kept
        already (False: another server posted its own first)."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(source_threads)
                .where(self._mine(source_threads), _TABLE.run_id == run_id, _TABLE.status.is_(None))
                .values(status=status)
            )
        return done.rowcount == 1

    async def report(self, run_id: str) -> bool:
        """Take the report of the run's end: True for the one caller that may post it,
        False once it was taken (by any server of the store)."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(source_threads)
                .where(
                    self._mine(source_threads), _TABLE.run_id == run_id, _TABLE.reported.is_(None)
                )
                .values(reported=time.time())
            )
        return done.rowcount == 1

    async def prune(self, before: float) -> int:
        """Forget the threads of runs reported before ``before``; how many went."""
        old = (self._mine(source_threads), _TABLE.reported < before)
        async with self.transaction(write=True) as db:
            pruned = await db.execute(delete(source_threads).where(*old))
        return int(pruned.rowcount)


class MemoryThreads(MemoryRepository):
    """Source threads in memory."""

    async def runs_in(self, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in ``thread``, newest first."""
        found = [
            t
            for t in self._data.threads.values()
            if t.source == source and t.thread == thread and self._mine(t.tenant)
        ]
        return sorted(found, key=lambda t: t.created, reverse=True)

    async def of_run(self, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        found = self._data.threads.get(run_id)
        if found is None or found.source != source or not self._mine(found.tenant):
            return None
        return found

    async def unreported(self, source: str) -> list[ThreadRecord]:
        """The runs of ``source`` whose end is not reported, oldest first."""
        found = [
            t
            for t in self._data.threads.values()
            if t.source == source and t.reported is None and self._mine(t.tenant)
        ]
        return sorted(found, key=lambda t: t.created)

    async def set_status(self, run_id: str, status: str) -> bool:
        """Keep the run's status message, unless one is kept already."""
        found = self._data.threads.get(run_id)
        if found is None or found.status is not None or not self._mine(found.tenant):
            return False
        self._data.threads[run_id] = found.model_copy(update={"status": status})
        return True

    async def report(self, run_id: str) -> bool:
        """Take the report of the run's end (True once)."""
        found = self._data.threads.get(run_id)
        if found is None or found.reported is not None or not self._mine(found.tenant):
            return False
        self._data.threads[run_id] = found.model_copy(update={"reported": time.time()})
        return True

    async def prune(self, before: float) -> int:
        """Forget the threads of runs reported before ``before``."""
        old = [
            run_id
            for run_id, t in self._data.threads.items()
            if t.reported is not None and t.reported < before and self._mine(t.tenant)
        ]
        for run_id in old:
            del self._data.threads[run_id]
        return len(old)
