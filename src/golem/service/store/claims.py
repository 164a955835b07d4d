"""The run queue in golem's store: queued runs wait in the ``runs`` table and servers claim
them. A claim is one conditional UPDATE (``WHERE status = 'queued'``), so two servers
sharing a database never take the same run; the next run is the oldest queued one of the
tenant with the fewest runs in progress, so one busy tenant cannot starve the others."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Table, func, select, update
from sqlalchemy.engine import Connection

from golem.blueprint.state import RunState, RunStatus
from golem.service.store.schema import runs

__all__ = ["ACTIVE", "RunQueueRecords"]

ACTIVE: tuple[RunStatus, ...] = ("running", "waiting")
CLAIM_TRIES = 20  # other servers may win a candidate; look again this many times


class _Store(Protocol):
    tenant: str | None

    def transaction(self, *, write: bool = False) -> AbstractContextManager[Connection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...


def _row_state(row: Any) -> RunState:
    from golem.service.store.sql import run_state  # noqa: PLC0415 - sql imports this module

    return run_state(row)


def _next_candidate(db: Connection) -> Any:
    """The queued run fairness picks next, or None."""
    in_progress: dict[str, int] = dict(
        db.execute(
            select(runs.c.tenant, func.count())
            .where(runs.c.status.in_(ACTIVE))
            .group_by(runs.c.tenant)
        ).all()
    )
    waiting = db.execute(
        select(runs.c.tenant, func.min(runs.c.created))
        .where(runs.c.status == "queued")
        .group_by(runs.c.tenant)
    ).all()
    if not waiting:
        return None
    tenant = min(waiting, key=lambda row: (in_progress.get(row[0], 0), row[1]))[0]
    return db.execute(
        select(runs)
        .where(runs.c.status == "queued", runs.c.tenant == tenant)
        .order_by(runs.c.created, runs.c.id)
        .limit(1)
    ).first()


class RunQueueRecords:
    """The queue half of SqlStore. Claims and recovery span all tenants."""

    def claim_next_run(self: _Store, owner: str) -> RunState | None:
        """Take the next queued run for server ``owner`` (its status becomes running), or
        None when nothing waits."""
        for _ in range(CLAIM_TRIES):
            with self.transaction(write=True) as db:
                row = _next_candidate(db)
                if row is None:
                    return None
                state = _row_state(row)
                state.status = "running"
                state.owner_server = owner
                state.updated = time.time()
                taken = db.execute(
                    update(runs)
                    .where(runs.c.id == state.id, runs.c.status == "queued")
                    .values(
                        status="running", owner=owner, updated=state.updated,
                        state=state.model_dump_json(),
                    )
                )  # fmt: skip
                if taken.rowcount == 1:
                    return state
        return None

    def count_runs(self: _Store, *statuses: RunStatus) -> int:
        """How many of this store's runs have one of ``statuses``."""
        with self.transaction() as db:
            return int(
                db.execute(
                    select(func.count()).where(runs.c.status.in_(statuses), self._mine(runs))
                ).scalar_one()
            )

    def list_active_runs(self: _Store) -> list[RunState]:
        """Runs in progress (running, or waiting at a gate), oldest first."""
        with self.transaction() as db:
            rows = db.execute(
                select(runs).where(runs.c.status.in_(ACTIVE), self._mine(runs))
                .order_by(runs.c.created)
            ).all()  # fmt: skip
        return [_row_state(row) for row in rows]

    def requeue_run(self: _Store, run_id: str) -> bool:
        """Put a run in progress whose server died back in the queue; False if it was not
        in progress."""
        with self.transaction(write=True) as db:
            row = db.execute(
                select(runs).where(runs.c.id == run_id, runs.c.status.in_(ACTIVE), self._mine(runs))
            ).first()
            if row is None:
                return False
            state = _row_state(row)
            state.status = "queued"
            state.owner_pid = state.owner_start = state.owner_server = None
            done = db.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status == row.status)
                .values(status="queued", owner=None, state=state.model_dump_json())
            )
        return done.rowcount == 1

    def cancel_queued(self: _Store, run_id: str) -> RunState | None:
        """Cancel a run no server has claimed yet; its new state, or None if it was not
        queued (a runner then acts on the cancel request)."""
        with self.transaction(write=True) as db:
            row = db.execute(
                select(runs).where(runs.c.id == run_id, runs.c.status == "queued", self._mine(runs))
            ).first()
            if row is None:
                return None
            state = _row_state(row)
            state.status = "cancelled"
            state.error = "cancelled before it started"
            state.cancel_requested = True
            state.updated = time.time()
            done = db.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status == "queued")
                .values(
                    status="cancelled", cancel_requested=True, updated=state.updated,
                    state=state.model_dump_json(),
                )
            )  # fmt: skip
        return state if done.rowcount == 1 else None
