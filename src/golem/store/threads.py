"""The threads chat and tracker sources asked for runs in (a Slack thread, a Linear issue),
in golem's store: one row per run, kept in the transaction that keeps the run
(``SqlStore.create_run``), with the message that shows the run's progress there and when its
end was reported. A server that starts goes on with the threads whose end is unreported; a
later request in a thread finds the thread's runs; the end is reported once whichever
servers share the store (a conditional update decides who reports it)."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.store.plumbing import SqlBase
from golem.store.records import ThreadRecord
from golem.store.schema import source_threads

__all__ = ["SqlThreads", "keep_thread"]

_TABLE = source_threads.c


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


class SqlThreads:
    """The source threads' part of SqlStore."""

    async def thread_runs(self: SqlBase, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in ``thread`` (this tenant's), newest first."""
        async with self.transaction() as db:
            rows = await db.execute(
                select(source_threads)
                .where(self._mine(source_threads), _TABLE.source == source, _TABLE.thread == thread)
                .order_by(_TABLE.created.desc())
            )
        return [_record(row) for row in rows]

    async def thread_of(self: SqlBase, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        mine = self._mine(source_threads)
        found = select(source_threads).where(mine, _TABLE.source == source, _TABLE.run_id == run_id)
        async with self.transaction() as db:
            row = (await db.execute(found)).first()
        return _record(row) if row is not None else None

    async def open_threads(self: SqlBase, source: str) -> list[ThreadRecord]:
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

    async def set_thread_status(self: SqlBase, run_id: str, status: str) -> bool:
        """Keep ``status`` as the message showing the run's progress, unless one is kept
        already (False: another server posted its own first)."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(source_threads)
                .where(self._mine(source_threads), _TABLE.run_id == run_id, _TABLE.status.is_(None))
                .values(status=status)
            )
        return done.rowcount == 1

    async def report_thread(self: SqlBase, run_id: str) -> bool:
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

    async def prune_threads(self: SqlBase, before: float) -> int:
        """Forget the threads of runs reported before ``before``; how many went."""
        old = (self._mine(source_threads), _TABLE.reported < before)
        async with self.transaction(write=True) as db:
            pruned = await db.execute(delete(source_threads).where(*old))
        return int(pruned.rowcount)
