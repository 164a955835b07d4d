"""What every repository of the store is built on, in SQL and in memory.

A store is a set of small repositories (its runs, the queue, checkpoints, deliveries,
threads, documents, provider limits, the local forge's records, forge credentials and API
keys). Each is made for one tenant (``None``: all tenants, which reads everything and
creates nothing) on data it shares with the store's other repositories: in SQL, one
``SqlDatabase`` (the engine, the change hub, the calls' deadline and the transaction every
repository runs in); in memory, one ``MemoryData`` and its hub.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Table, select, text, true
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from golem.core.errors import StoreError, StoreUnavailable
from golem.store.bounds import RETRY_AFTER, StoreDeadline
from golem.store.database import WRITE, safe_url
from golem.store.notify import CHANNEL, Hub
from golem.store.records import (
    ApiKeyRecord,
    CheckpointRecord,
    CommentRecord,
    DocumentRecord,
    EventRecord,
    ForgeCredential,
    ForgeName,
    PendingRecord,
    PullRequestRecord,
    RunRecord,
    ThreadRecord,
    check_claim,
)
from golem.store.schema import runs

if TYPE_CHECKING:
    from sqlalchemy.dialects.sqlite import Insert

    from golem.store.signals import FileSignals

__all__ = [
    "MemoryData",
    "MemoryRepository",
    "SqlDatabase",
    "SqlRepository",
    "held_claim",
    "run_record",
    "upsert",
]


def refuse_creating(tenant: str | None, what: str) -> str:
    """The tenant that creates ``what``; StoreError for a store of all tenants."""
    if tenant is None:
        raise StoreError(
            f"a store for all tenants cannot create {what}: use store.for_tenant(tenant)"
        )
    return tenant


# SQL --------------------------------------------------------------------------------------


class SqlDatabase:
    """The connections a SQL store and its ``for_tenant`` stores share: the engine, the
    hub that wakes this process's waiters, the signals to other processes on a SQLite file,
    and the deadline of every call."""

    def __init__(
        self,
        url: str,
        engine: AsyncEngine,
        hub: Hub,
        deadline: StoreDeadline,
        signals: FileSignals | None = None,
    ) -> None:
        self.url = url
        self.engine = engine
        self.hub = hub
        self.deadline = deadline
        self.signals = signals

    @contextlib.asynccontextmanager
    async def transaction(
        self, *, write: bool = False, changed: Sequence[str] = ()
    ) -> AsyncIterator[AsyncConnection]:
        """A transaction (``write``: one that changes rows); database errors become
        StoreError. The keys in ``changed`` (a list may be filled in by the transaction)
        are announced once it commits."""
        try:
            async with self.engine.connect() as connection:
                await connection.execution_options(**{WRITE: write})
                async with connection.begin():
                    yield connection
                    if changed and connection.dialect.name == "postgresql":
                        for key in changed:  # delivered when the transaction commits
                            await connection.execute(
                                text("SELECT pg_notify(:channel, :key)"),
                                {"channel": CHANNEL, "key": key},
                            )
        except (OperationalError, InterfaceError, PoolTimeout, OSError) as exc:
            raise _unavailable(self.url, exc) from exc
        except DBAPIError as exc:
            if exc.connection_invalidated:
                raise _unavailable(self.url, exc) from exc
            raise StoreError(f"the database {safe_url(self.url)} failed: {exc}") from exc
        except SQLAlchemyError as exc:
            raise StoreError(f"the database {safe_url(self.url)} failed: {exc}") from exc
        for key in changed:
            self.hub.notify(key)
        if self.signals is not None:
            self.signals.send(tuple(changed))


def _unavailable(url: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(
        f"the database {safe_url(url)} cannot be reached: {exc}", retry_after=RETRY_AFTER
    )


class SqlRepository:
    """A repository in SQL: one tenant's view (``None``: all tenants') of the database.
    Its calls are bounded by the database's deadline (``bounds.bounded``)."""

    def __init__(self, database: SqlDatabase, tenant: str | None) -> None:
        self.database = database
        self.tenant = tenant

    @property
    def deadline(self) -> StoreDeadline:
        """The deadline of this repository's calls (its database's)."""
        return self.database.deadline

    def transaction(
        self, *, write: bool = False, changed: Sequence[str] = ()
    ) -> contextlib.AbstractAsyncContextManager[AsyncConnection]:
        """A transaction on the database (see ``SqlDatabase.transaction``)."""
        return self.database.transaction(write=write, changed=changed)

    def _mine(self, table: Table) -> ColumnElement[bool]:
        """The rows this repository may see."""
        return true() if self.tenant is None else table.c.tenant == self.tenant

    def _creating(self, what: str) -> str:
        return refuse_creating(self.tenant, what)


def run_record(row: Any) -> RunRecord:
    """A run's record from its row."""
    return RunRecord(
        id=row.id,
        tenant=row.tenant,
        status=row.status,
        created=row.created,
        updated=row.updated,
        document=row.state,
        cancel_requested=bool(row.cancel_requested),
        gate_decision=row.gate_decision,
        owner=row.owner,
        claim=row.claim,
    )


async def held_claim(
    db: AsyncConnection, mine: ColumnElement[bool], run_id: str, claim: int | None
) -> int | None:
    """Lock the run's row for this write and return its claim (None: not the store's run);
    RunTaken when ``claim`` is given and the run's is another (it was claimed again since
    the writer read it)."""
    held = (
        await db.execute(select(runs.c.claim).where(runs.c.id == run_id, mine).with_for_update())
    ).scalar_one_or_none()
    if held is None:
        return None
    check_claim(run_id, int(held), claim)
    return int(held)


def upsert(db: AsyncConnection, table: Table) -> Insert:
    """An INSERT into ``table`` in the connection's dialect, with its ``on_conflict_do_*``
    (PostgreSQL's and SQLite's are the same shape). The dialect's module is imported here,
    when a write needs it: reading the store (`golem runs ls`) never pays for it."""
    if db.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)  # type: ignore[return-value]
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


# Memory -----------------------------------------------------------------------------------


@dataclass
class MemoryData:
    """Everything a memory store keeps (records are immutable: callers never change it)."""

    runs: dict[str, RunRecord] = field(default_factory=dict)
    events: dict[str, list[EventRecord]] = field(default_factory=dict)
    pull_requests: list[tuple[str, PullRequestRecord]] = field(default_factory=list)
    comments: list[tuple[str, CommentRecord]] = field(default_factory=list)
    tokens: dict[tuple[str, ForgeName], tuple[str, ForgeCredential]] = field(default_factory=dict)
    keys: dict[str, tuple[ApiKeyRecord, str]] = field(default_factory=dict)
    checkpoints: dict[str, CheckpointRecord] = field(default_factory=dict)
    deliveries: dict[tuple[str, str, str], tuple[str | None, float]] = field(default_factory=dict)
    threads: dict[str, ThreadRecord] = field(default_factory=dict)
    pending: dict[tuple[str, str, str, str], PendingRecord] = field(default_factory=dict)
    resume_at: dict[str, float] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    documents: dict[tuple[str, str], DocumentRecord] = field(default_factory=dict)
    hub: Hub = field(default_factory=Hub)


class MemoryRepository:
    """A repository in memory: one tenant's view (``None``: all tenants') of the data (one
    event loop's: it takes no locks)."""

    def __init__(self, data: MemoryData, tenant: str | None) -> None:
        self._data = data
        self.tenant = tenant

    def _mine(self, tenant: str) -> bool:
        return self.tenant is None or tenant == self.tenant

    def _creating(self, what: str) -> str:
        return refuse_creating(self.tenant, what)

    def _run(self, run_id: str) -> RunRecord | None:
        run = self._data.runs.get(run_id)
        return run if run is not None and self._mine(run.tenant) else None

    def _runs(self) -> list[RunRecord]:
        return [run for run in self._data.runs.values() if self._mine(run.tenant)]

    def _held(self, run_id: str, claim: int | None) -> bool:
        """Whether the run is this tenant's; RunTaken if ``claim`` is not the run's."""
        run = self._run(run_id)
        if run is not None:
            check_claim(run_id, run.claim, claim)
        return run is not None

    def _update(self, run_id: str, *, notify: bool = True, **values: object) -> None:
        run = self._run(run_id)
        if run is None:
            return
        self._data.runs[run_id] = run.model_copy(update=values)
        if notify:
            self._changed(run_id)

    def _changed(self, *keys: str) -> None:
        for key in keys:
            self._data.hub.notify(key)
