"""The run queue in golem's store: queued runs wait in the ``runs`` table and servers claim
them. A claim is one conditional UPDATE (``WHERE status = 'queued'``), so two servers
sharing a database never take the same run; the next run is the oldest queued one of the
tenant with the fewest runs in progress, so one busy tenant cannot starve the others."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.store.notify import QUEUE, control_key
from golem.store.plumbing import SqlBase, run_record
from golem.store.records import ACTIVE, RunRecord
from golem.store.schema import runs

__all__ = ["CLAIM_TRIES", "SqlQueue"]

CLAIM_TRIES = 20  # other servers may win a candidate; look again this many times


async def _next_candidate(db: AsyncConnection) -> Any:
    """The queued run fairness picks next, or None."""
    in_progress: dict[str, int] = dict(
        (
            await db.execute(
                select(runs.c.tenant, func.count())
                .where(runs.c.status.in_(ACTIVE))
                .group_by(runs.c.tenant)
            )
        ).all()
    )
    waiting = (
        await db.execute(
            select(runs.c.tenant, func.min(runs.c.created))
            .where(runs.c.status == "queued")
            .group_by(runs.c.tenant)
        )
    ).all()
    if not waiting:
        return None
    tenant = min(waiting, key=lambda row: (in_progress.get(row[0], 0), row[1]))[0]
    return (
        await db.execute(
            select(runs.c.id)
            .where(runs.c.status == "queued", runs.c.tenant == tenant)
            .order_by(runs.c.created, runs.c.id)
            .limit(1)
        )
    ).scalar_one_or_none()


class SqlQueue:
    """The queue part of SqlStore. Claims span all tenants."""

    async def claim_next_run(self: SqlBase, owner: str) -> RunRecord | None:
        """Take the next queued run for server ``owner`` (its status becomes running, its
        claim goes up by one), or None when nothing waits."""
        for _ in range(CLAIM_TRIES):
            async with self.transaction(write=True) as db:
                run_id = await _next_candidate(db)
                if run_id is None:
                    return None
                taken = await db.execute(
                    update(runs)
                    .where(runs.c.id == run_id, runs.c.status == "queued")
                    .values(
                        status="running", owner=owner, claim=runs.c.claim + 1, updated=time.time()
                    )
                    .returning(*runs.c)
                )
                row = taken.first()
                if row is not None:
                    return run_record(row)
        return None

    async def count_runs(self: SqlBase, *statuses: str) -> int:
        """How many of this store's runs have one of ``statuses``."""
        async with self.transaction() as db:
            counted = await db.execute(
                select(func.count()).where(runs.c.status.in_(statuses), self._mine(runs))
            )
        return int(counted.scalar_one())

    async def list_active_runs(self: SqlBase) -> list[RunRecord]:
        """Runs in progress (running, or waiting at a gate), oldest first."""
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(runs)
                    .where(runs.c.status.in_(ACTIVE), self._mine(runs))
                    .order_by(runs.c.created)
                )
            ).all()
        return [run_record(row) for row in rows]

    async def requeue_run(self: SqlBase, run_id: str, document: str) -> bool:
        """Put a run in progress whose server died back in the queue, with ``document``
        as its state; False if it was not in progress. Its claim goes up by one: what its
        runner still writes is refused, and that runner, if it still runs, is woken to
        learn it."""
        changed = (run_id, control_key(run_id), QUEUE)
        async with self.transaction(write=True, changed=changed) as db:
            done = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status.in_(ACTIVE), self._mine(runs))
                .values(status="queued", owner=None, claim=runs.c.claim + 1, state=document)
            )
        return done.rowcount == 1

    async def cancel_queued(self: SqlBase, run_id: str, document: str) -> bool:
        """Cancel a run no server has claimed yet, with ``document`` as its state; False
        if it was not queued (a runner then acts on the cancel request)."""
        changed = (run_id, control_key(run_id))
        async with self.transaction(write=True, changed=changed) as db:
            done = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status == "queued", self._mine(runs))
                .values(
                    status="cancelled", cancel_requested=True, updated=time.time(), state=document
                )
            )
        return done.rowcount == 1
