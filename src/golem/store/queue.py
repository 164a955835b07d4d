"""The run queue in golem's store: queued runs wait in the ``runs`` table and servers claim
them. A claim is one conditional UPDATE (``WHERE status = 'queued'``), so two servers
sharing a database never take the same run; the next run is the oldest queued one of the
tenant with the fewest runs in progress, so one busy tenant cannot starve the others.

A run whose model provider stays down is paused (status ``waiting``, no owner) with the
time it resumes (``runs.resume_at``); once that time comes, any server puts it back in the
queue (one conditional UPDATE, so servers sharing the store resume it once). A pause is
announced under ``RESUME``: a server's one timer, set to the earliest resume time, is woken
to look again (never a poll of the store)."""

from __future__ import annotations

import time
from typing import Any, Protocol

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.store.bounds import bounded
from golem.store.notify import QUEUE, RESUME, ROOM, control_key
from golem.store.records import ACTIVE, RunRecord
from golem.store.repository import MemoryRepository, SqlRepository, held_claim, run_record
from golem.store.schema import runs

__all__ = ["CLAIM_TRIES", "MemoryQueue", "Queue", "SqlQueue"]

CLAIM_TRIES = 20  # other servers may win a candidate; look again this many times


class Queue(Protocol):
    """The run queue and paused runs (``store.queue``)."""

    async def claim_next(self, owner: str) -> RunRecord | None:
        """Take the next queued run (fairly across tenants) for server ``owner``; its
        claim goes up by one."""
        ...

    async def requeue(self, run_id: str, document: str) -> bool:
        """Put a run in progress back in the queue (its claim goes up by one, so that its
        runner's writes are refused from now on); False if it was not in progress."""
        ...

    async def cancel_queued(self, run_id: str, document: str) -> bool:
        """Cancel a run nobody claimed yet; False if it was not queued."""
        ...

    async def pause(
        self,
        run_id: str,
        *,
        resume_at: float,
        updated: float,
        document: str,
        claim: int | None = None,
    ) -> None:
        """Keep a run paused (status waiting, no owner) until ``resume_at``, with
        ``document`` as its state; with ``claim``, only while the run's claim is that one
        (else RunTaken). Announced under ``RESUME``."""
        ...

    async def resume_due(self, now: float) -> list[str]:
        """Queue again the paused runs whose resume time is ``now`` or before (their
        claims go up by one); their ids."""
        ...

    async def next_resume(self) -> float | None:
        """The earliest time a paused run resumes, or None when none waits."""
        ...


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


@bounded(
    retried={"next_resume", "pause"},
    once={"claim_next", "requeue", "cancel_queued", "resume_due"},
)
class SqlQueue(SqlRepository):
    """The queue in SQL. Claims span all tenants."""

    async def claim_next(self, owner: str) -> RunRecord | None:
        """Take the next queued run for server ``owner`` (its status becomes running, its
        claim goes up by one), or None when nothing waits."""
        for _ in range(CLAIM_TRIES):
            changed: list[str] = []  # a claimed run leaves the queue: room for another
            async with self.transaction(write=True, changed=changed) as db:
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
                    changed.append(ROOM)
            if row is not None:
                return run_record(row)
        return None

    async def requeue(self, run_id: str, document: str) -> bool:
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

    async def cancel_queued(self, run_id: str, document: str) -> bool:
        """Cancel a run no server has claimed yet, with ``document`` as its state; False
        if it was not queued (a runner then acts on the cancel request)."""
        changed = (run_id, control_key(run_id), ROOM)
        async with self.transaction(write=True, changed=changed) as db:
            done = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status == "queued", self._mine(runs))
                .values(
                    status="cancelled", cancel_requested=True, updated=time.time(), state=document
                )
            )
        return done.rowcount == 1

    async def pause(
        self,
        run_id: str,
        *,
        resume_at: float,
        updated: float,
        document: str,
        claim: int | None = None,
    ) -> None:
        """Keep a run paused until ``resume_at`` (its status ``waiting``, ``document`` its
        state, no owner); with ``claim``, only while the run's claim is that one (else
        RunTaken)."""
        fenced = [runs.c.claim == claim] if claim is not None else []
        async with self.transaction(write=True, changed=(run_id, RESUME)) as db:
            paused = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), *fenced)
                .values(
                    status="waiting",
                    resume_at=resume_at,
                    owner=None,
                    updated=updated,
                    state=document,
                )
            )
            if paused.rowcount == 0:
                await held_claim(db, self._mine(runs), run_id, claim)

    async def resume_due(self, now: float) -> list[str]:
        """Queue again the paused runs whose time has come (at ``now``); their ids. Each
        one's claim goes up by one, as any requeue's."""
        due = (
            runs.c.status == "waiting",
            runs.c.resume_at.is_not(None),
            runs.c.resume_at <= now,
            self._mine(runs),
        )
        async with self.transaction(write=True) as db:
            ids = [row[0] for row in (await db.execute(select(runs.c.id).where(*due))).all()]
            if not ids:
                return []
        changed = [QUEUE, *ids, *(control_key(run_id) for run_id in ids)]
        resumed: list[str] = []
        async with self.transaction(write=True, changed=changed) as db:
            for run_id in ids:
                done = await db.execute(
                    update(runs)
                    .where(runs.c.id == run_id, *due)
                    .values(status="queued", resume_at=None, claim=runs.c.claim + 1, updated=now)
                )
                if done.rowcount == 1:
                    resumed.append(run_id)
        return resumed

    async def next_resume(self) -> float | None:
        """The earliest time a paused run resumes, or None when none waits."""
        async with self.transaction() as db:
            earliest = await db.execute(
                select(func.min(runs.c.resume_at)).where(
                    runs.c.status == "waiting", runs.c.resume_at.is_not(None), self._mine(runs)
                )
            )
        value = earliest.scalar_one_or_none()
        return None if value is None else float(value)


class MemoryQueue(MemoryRepository):
    """The queue in memory."""

    async def claim_next(self, owner: str) -> RunRecord | None:
        """Take the next queued run, fairly across tenants, for server ``owner``."""
        queued = [run for run in self._data.runs.values() if run.status == "queued"]
        if not queued:
            return None
        busy: dict[str, int] = {}
        for run in self._data.runs.values():
            if run.status in ACTIVE:
                busy[run.tenant] = busy.get(run.tenant, 0) + 1
        chosen = min(queued, key=lambda run: (busy.get(run.tenant, 0), run.created, run.id))
        self._data.runs[chosen.id] = chosen.model_copy(
            update={
                "status": "running",
                "owner": owner,
                "claim": chosen.claim + 1,
                "updated": time.time(),
            }
        )
        self._changed(ROOM)
        return self._data.runs[chosen.id]

    async def requeue(self, run_id: str, document: str) -> bool:
        """Put a run in progress back in the queue."""
        run = self._run(run_id)
        if run is None or run.status not in ACTIVE:
            return False
        self._update(run_id, status="queued", owner=None, claim=run.claim + 1, document=document)
        self._changed(control_key(run_id), QUEUE)
        return True

    async def cancel_queued(self, run_id: str, document: str) -> bool:
        """Cancel a run nobody claimed yet."""
        run = self._run(run_id)
        if run is None or run.status != "queued":
            return False
        self._update(
            run_id,
            status="cancelled",
            cancel_requested=True,
            updated=time.time(),
            document=document,
        )
        self._changed(control_key(run_id), ROOM)
        return True

    async def pause(
        self,
        run_id: str,
        *,
        resume_at: float,
        updated: float,
        document: str,
        claim: int | None = None,
    ) -> None:
        """Keep a run paused until ``resume_at`` (with ``claim``: only while it holds)."""
        if self._held(run_id, claim):
            self._update(run_id, status="waiting", owner=None, updated=updated, document=document)
            self._data.resume_at[run_id] = resume_at
            self._changed(RESUME)

    async def resume_due(self, now: float) -> list[str]:
        """Queue again the paused runs whose time has come; their ids."""
        due = [
            run
            for run in self._runs()
            if run.status == "waiting" and self._data.resume_at.get(run.id, now + 1) <= now
        ]
        for run in due:
            self._data.resume_at.pop(run.id, None)
            self._update(run.id, status="queued", claim=run.claim + 1, updated=now)
            self._changed(control_key(run.id))
        if due:
            self._changed(QUEUE)
        return [run.id for run in due]

    async def next_resume(self) -> float | None:
        """The earliest time a paused run resumes, or None."""
        times = [
            self._data.resume_at[run.id]
            for run in self._runs()
            if run.status == "waiting" and run.id in self._data.resume_at
        ]
        return min(times, default=None)
