"""golem's store in SQL: a SQLite file by default, PostgreSQL when a database URL is given.

It keeps runs, their events and the local forge's pull requests; it implements the
blueprint layer's RunStore and the forge layer's PullRequestStore. The schema is migrated
with Alembic when a store opens, so several processes (a runner, ``golem runs cancel``,
servers) can share one database.

A store acts for one tenant: it sees and changes that tenant's records only. A store for
all tenants (``tenant=None``, the server's own) reads everything and creates nothing;
``for_tenant`` gives a tenant's store on the same connections.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import TypeAdapter
from sqlalchemy import ColumnElement, Engine, Table, func, insert, select, true, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from golem.blueprint.events import RunEvent
from golem.blueprint.state import RunState
from golem.core.config import GolemConfig
from golem.core.errors import RunNotFound, StoreError
from golem.service.store.claims import RunQueueRecords
from golem.service.store.credentials import CredentialRecords
from golem.service.store.database import WRITE, migrate, open_engine, safe_url
from golem.service.store.forge_records import ForgeRecords
from golem.service.store.schema import run_events, runs

__all__ = ["SqlStore", "database_url"]

_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


def database_url(config: GolemConfig) -> str:
    """The configured database URL, or the SQLite file in the state directory."""
    if config.database_url:
        return config.database_url
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{config.state_dir / 'golem.db'}"


class SqlStore(ForgeRecords, RunQueueRecords, CredentialRecords):
    """Runs, events, pull requests and forge credentials of one tenant (``default``
    outside the server)."""

    def __init__(
        self, url: str, *, tenant: str | None = "default", _engine: Engine | None = None
    ) -> None:
        self.url = url
        self.tenant = tenant
        self._owns_engine = _engine is None
        self.engine: Engine = _engine if _engine is not None else open_engine(url)
        if self._owns_engine:
            migrate(self.engine)

    @classmethod
    def open(cls, config: GolemConfig, *, tenant: str | None = "default") -> SqlStore:
        """The store the configuration names."""
        return cls(database_url(config), tenant=tenant)

    def for_tenant(self, tenant: str) -> SqlStore:
        """``tenant``'s store on this store's connections (closing it closes nothing)."""
        return SqlStore(self.url, tenant=tenant, _engine=self.engine)

    def close(self) -> None:
        """Release the connections (a ``for_tenant`` store leaves them to its parent)."""
        if self._owns_engine:
            self.engine.dispose()

    # Runs -----------------------------------------------------------------------------

    def create_run(self, state: RunState) -> None:
        """Keep a new run (of this store's tenant)."""
        tenant = self._creating("a run")
        with self.transaction(write=True) as db:
            db.execute(
                insert(runs).values(
                    id=state.id,
                    tenant=tenant,
                    status=state.status,
                    created=state.created,
                    updated=state.updated,
                    state=state.model_dump_json(),
                )
            )

    def save_run(self, state: RunState) -> None:
        """Replace a run's state; its cancel request and gate decision are kept."""
        state.updated = time.time()
        with self.transaction(write=True) as db:
            db.execute(
                update(runs)
                .where(runs.c.id == state.id, self._mine(runs))
                .values(status=state.status, updated=state.updated, state=state.model_dump_json())
            )

    def load_run(self, run_id: str) -> RunState | None:
        """A run with its latest cancel request and gate decision, or None."""
        with self.transaction() as db:
            row = db.execute(select(runs).where(runs.c.id == run_id, self._mine(runs))).first()
        return run_state(row) if row is not None else None

    def run_tenant(self, run_id: str) -> str | None:
        """The tenant a run belongs to (None: no such run that this store may see)."""
        with self.transaction() as db:
            tenant = db.execute(
                select(runs.c.tenant).where(runs.c.id == run_id, self._mine(runs))
            ).scalar_one_or_none()
        return str(tenant) if tenant is not None else None

    def list_runs(self, limit: int = 50) -> list[RunState]:
        """Runs, newest first."""
        with self.transaction() as db:
            rows = db.execute(
                select(runs).where(self._mine(runs)).order_by(runs.c.created.desc()).limit(limit)
            ).all()
        return [run_state(row) for row in rows]

    def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        self._set(run_id, cancel_requested=True)

    def decide_gate(self, run_id: str, decision: Literal["approved", "rejected"]) -> bool:
        """Answer the gate a run waits at; False when it was answered already (the first
        answer stands)."""
        with self.transaction(write=True) as db:
            done = db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), runs.c.gate_decision.is_(None))
                .values(gate_decision=decision)
            )
        return done.rowcount == 1

    def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        self._set(run_id, gate_decision=None)

    def append_event(self, run_id: str, event: RunEvent) -> int:
        """Keep an event; returns its sequence number in the run (from 1)."""
        with self.transaction(write=True) as db:
            found = db.execute(
                select(runs.c.id).where(runs.c.id == run_id, self._mine(runs)).with_for_update()
            ).first()  # the run's row lock numbers its events one writer at a time
            if found is None:
                raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
            last = db.execute(
                select(func.coalesce(func.max(run_events.c.seq), 0)).where(
                    run_events.c.run_id == run_id
                )
            ).scalar_one()
            seq = int(last) + 1
            db.execute(
                insert(run_events).values(
                    run_id=run_id,
                    seq=seq,
                    time=event.time,
                    type=event.type,
                    data=event.model_dump_json(),
                )
            )
        return seq

    def events(self, run_id: str, after: int = 0) -> list[tuple[int, RunEvent]]:
        """The run's events after sequence number ``after``, in order."""
        visible = select(runs.c.id).where(runs.c.id == run_id, self._mine(runs))
        with self.transaction() as db:
            rows = db.execute(
                select(run_events.c.seq, run_events.c.data)
                .where(run_events.c.run_id.in_(visible), run_events.c.seq > after)
                .order_by(run_events.c.seq)
            ).all()
        return [(int(row.seq), _EVENT.validate_json(row.data)) for row in rows]

    # Plumbing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[Connection]:
        """A transaction (``write``: one that changes rows); database errors become
        StoreError."""
        try:
            with (
                self.engine.connect().execution_options(**{WRITE: write}) as connection,
                connection.begin(),
            ):
                yield connection
        except SQLAlchemyError as exc:
            raise StoreError(f"the database {safe_url(self.url)} failed: {exc}") from exc

    def _mine(self, table: Table) -> ColumnElement[bool]:
        """The rows this store may see."""
        return true() if self.tenant is None else table.c.tenant == self.tenant

    def _creating(self, what: str) -> str:
        if self.tenant is None:
            raise StoreError(
                f"a store for all tenants cannot create {what}: use store.for_tenant(tenant)"
            )
        return self.tenant

    def _set(self, run_id: str, **values: Any) -> None:
        with self.transaction(write=True) as db:
            db.execute(update(runs).where(runs.c.id == run_id, self._mine(runs)).values(**values))


def run_state(row: Any) -> RunState:
    """A run's state from its row: the cancel request, gate decision and owner kept in
    their own columns win over the JSON."""
    state = RunState.model_validate_json(row.state)
    state.cancel_requested = bool(row.cancel_requested)
    state.owner_server = row.owner
    if state.gate is not None and state.gate.decision is None and row.gate_decision:
        state.gate = state.gate.model_copy(
            update={"decision": row.gate_decision, "decided_by": "person"}
        )
    return state
