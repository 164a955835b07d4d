"""Retention in golem's store: the events of runs that ended long ago are deleted, all but
their ``run_end`` (the runs themselves stay listed, with their outcome, and a follower still
learns how each ended); the layer above removes what those runs left on disk."""

from __future__ import annotations

from sqlalchemy import delete, exists, select

from golem.store.plumbing import SqlBase, run_record
from golem.store.records import FINISHED, RunRecord
from golem.store.schema import run_events, runs

__all__ = ["SqlRetention"]


class SqlRetention:
    """The retention part of SqlStore."""

    async def prune_events(self: SqlBase, ended_before: float) -> list[RunRecord]:
        """Delete the events of this store's runs that ended before ``ended_before`` (a
        time), all but their ``run_end``; returns those runs (each once: a run with nothing
        left to delete is not returned)."""
        pruned = run_events.c.type != "run_end"
        has_events = exists().where(run_events.c.run_id == runs.c.id, pruned)
        old = (
            runs.c.status.in_(FINISHED),
            runs.c.updated < ended_before,
            self._mine(runs),
            has_events,
        )
        async with self.transaction(write=True) as db:
            rows = (await db.execute(select(runs).where(*old))).all()
            ids = [row.id for row in rows]
            if ids:
                await db.execute(delete(run_events).where(run_events.c.run_id.in_(ids), pruned))
        return [run_record(row) for row in rows]
