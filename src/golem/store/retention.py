"""Retention in golem's store: the events of runs that ended long ago are deleted, all but
their ``run_end`` (the runs themselves stay listed, with their outcome, and a follower still
learns how each ended); the layer above removes what those runs left on disk."""

from __future__ import annotations

from sqlalchemy import delete, exists, select

from golem.store.plumbing import SqlBase, run_record
from golem.store.records import FINISHED, RunRecord
from golem.store.schema import run_events, runs

__all__ = ["SqlRetention"]

_PRUNED = run_events.c.type != "run_end"  # a run's run_end is kept


class SqlRetention:
    """The retention part of SqlStore."""

    async def prunable_runs(self: SqlBase, ended_before: float) -> list[RunRecord]:
        """This store's runs that ended before ``ended_before`` (a time) with events to
        prune (any but their ``run_end``)."""
        has_events = exists().where(run_events.c.run_id == runs.c.id, _PRUNED)
        old = (
            runs.c.status.in_(FINISHED),
            runs.c.updated < ended_before,
            self._mine(runs),
            has_events,
        )
        async with self.transaction() as db:
            rows = (await db.execute(select(runs).where(*old))).all()
        return [run_record(row) for row in rows]

    async def prune_events(self: SqlBase, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end``."""
        mine = select(runs.c.id).where(runs.c.id == run_id, self._mine(runs))
        async with self.transaction(write=True) as db:
            await db.execute(delete(run_events).where(run_events.c.run_id.in_(mine), _PRUNED))
