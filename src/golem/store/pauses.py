"""Paused runs in golem's store: a run whose model provider stays down waits (status
``waiting``) with the time it resumes (``runs.resume_at``); nobody owns it meanwhile. Once
that time comes, any server puts it back in the queue (one conditional UPDATE, so servers
sharing the store resume it once) and a worker resumes it from where it paused.

A pause is announced under ``RESUME``: a server's one timer, set to the earliest resume
time, is woken to look again (never a poll of the store)."""

from __future__ import annotations

from sqlalchemy import func, select, update

from golem.store.notify import QUEUE, RESUME, control_key
from golem.store.plumbing import SqlBase, held_claim
from golem.store.schema import runs

__all__ = ["SqlPauses"]


class SqlPauses:
    """The paused-runs part of SqlStore."""

    async def pause_run(
        self: SqlBase,
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

    async def resume_due_runs(self: SqlBase, now: float) -> list[str]:
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

    async def next_resume(self: SqlBase) -> float | None:
        """The earliest time a paused run resumes, or None when none waits."""
        async with self.transaction() as db:
            earliest = await db.execute(
                select(func.min(runs.c.resume_at)).where(
                    runs.c.status == "waiting", runs.c.resume_at.is_not(None), self._mine(runs)
                )
            )
        value = earliest.scalar_one_or_none()
        return None if value is None else float(value)
