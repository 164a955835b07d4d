"""golem's store in SQL: a SQLite file by default, PostgreSQL when a database URL is given.

It keeps runs, their events, the run queue, the webhook deliveries that started runs, API
keys, tenants' forge credentials and the local forge's records. The schema is migrated with
Alembic when a store opens, so several processes (a runner, ``golem runs cancel``,
servers) can share one database. Each change a waiter may wait for is announced
(``golem.store.notify``): to this process's hub once committed, and on PostgreSQL with
``NOTIFY`` to the other processes too.

A store acts for one tenant: it sees and changes that tenant's records only. A store for
all tenants (``tenant=None``, the server's own) reads everything and creates nothing;
``for_tenant`` gives a tenant's store on the same connections.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Table, func, insert, select, text, true, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from golem.core.config import GolemConfig
from golem.core.errors import QueueFull, RunNotFound, StoreError, StoreUnavailable
from golem.store.api_keys import SqlApiKeys
from golem.store.bounds import RETRY_AFTER, StoreDeadline, bounded_calls
from golem.store.checkpoints import SqlCheckpoints
from golem.store.claims import SqlQueue
from golem.store.credentials import SqlCredentials
from golem.store.database import DEFAULT_TIMEOUT, WRITE, migrate, open_engine, safe_url
from golem.store.deliveries import SqlDeliveries, keep_delivery
from golem.store.documents import SqlDocuments
from golem.store.forge_records import SqlForgeRecords
from golem.store.notify import CHANNEL, QUEUE, Hub, Signal, control_key
from golem.store.pauses import SqlPauses
from golem.store.plumbing import held_claim, run_record
from golem.store.provider_limits import SqlProviderLimits
from golem.store.records import (
    Decision,
    DeliveryRecord,
    EventRecord,
    RunCap,
    RunRecord,
    ThreadRecord,
)
from golem.store.retention import SqlRetention
from golem.store.schema import run_events, runs
from golem.store.signals import FileSignals
from golem.store.threads import SqlThreads, keep_thread

if TYPE_CHECKING:
    from golem.store.listener import PostgresListener

__all__ = ["SqlStore", "database_url"]

log = logging.getLogger("golem.store.sql")


def database_url(config: GolemConfig) -> str:
    """The configured database URL, or the SQLite file in the state directory."""
    if config.database_url:
        return config.database_url
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{config.state_dir / 'golem.db'}"


def _check_sqlite_directory(engine: AsyncEngine) -> None:
    """A SQLite file's directory must exist (found here, not by a driver thread that
    outlives the failed connection)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or database in (None, "", ":memory:"):
        return
    if not Path(str(database)).parent.is_dir():
        raise StoreError(
            f"cannot prepare database {safe_url(str(engine.url))}: its directory "
            f"{Path(str(database)).parent} does not exist"
        )


def _file_signals(store: SqlStore) -> FileSignals | None:
    """Signals between the processes on a SQLite file (None: PostgreSQL, an in-memory
    SQLite, or a platform without them; waiters then re-check)."""
    database = store.engine.url.database
    if store.engine.dialect.name != "sqlite" or database in (None, "", ":memory:"):
        return None
    if not FileSignals.available():
        return None
    signals = FileSignals(Path(database), store._hub)
    try:
        signals.start()
    except OSError as exc:
        log.warning("no change signals beside %s (%s): waiters re-check", database, exc)
        signals.close()
        return None
    return signals


@bounded_calls
class SqlStore(
    SqlQueue,
    SqlCredentials,
    SqlForgeRecords,
    SqlApiKeys,
    SqlRetention,
    SqlCheckpoints,
    SqlDeliveries,
    SqlDocuments,
    SqlPauses,
    SqlProviderLimits,
    SqlThreads,
):
    """Runs, events, keys, credentials and forge records of one tenant (``default``
    outside the server); ``tenant=None``: all tenants'. Open it with ``connect``."""

    def __init__(
        self,
        url: str,
        engine: AsyncEngine,
        hub: Hub,
        *,
        tenant: str | None,
        signals: FileSignals | None = None,
        deadline: StoreDeadline | None = None,
    ) -> None:
        self.url = url
        self.deadline = deadline or StoreDeadline(DEFAULT_TIMEOUT, safe_url(url))
        self.engine = engine
        self.tenant = tenant
        self._hub = hub
        self._signals = signals
        self._listener: PostgresListener | None = None
        self._owns_engine = False

    @classmethod
    async def connect(
        cls, url: str, *, tenant: str | None = "default", timeout: float = DEFAULT_TIMEOUT
    ) -> SqlStore:
        """The store at ``url``, its schema migrated, listening for other processes'
        changes (PostgreSQL); each call gives up after ``timeout`` seconds."""
        engine = open_engine(url, timeout=timeout)
        _check_sqlite_directory(engine)
        deadline = StoreDeadline(timeout, safe_url(url))
        store = cls(url, engine, Hub(), tenant=tenant, deadline=deadline)
        store._owns_engine = True
        try:
            await migrate(store.engine)
            if store.engine.dialect.name == "postgresql":
                # psycopg is imported only for PostgreSQL (a SQLite store's CLI starts faster)
                from golem.store.listener import PostgresListener  # noqa: PLC0415

                store._listener = PostgresListener(url, store._hub)
                await store._listener.start()
            store._signals = _file_signals(store)
        except BaseException:
            await store.engine.dispose()
            raise
        return store

    @classmethod
    async def open(cls, config: GolemConfig, *, tenant: str | None = "default") -> SqlStore:
        """The store the configuration names."""
        return await cls.connect(
            database_url(config), tenant=tenant, timeout=config.database_timeout
        )

    def for_tenant(self, tenant: str) -> SqlStore:
        """``tenant``'s store on this store's connections (closing it closes nothing)."""
        return SqlStore(
            self.url,
            self.engine,
            self._hub,
            tenant=tenant,
            signals=self._signals,
            deadline=self.deadline,
        )

    async def close(self) -> None:
        """Release the connections (a ``for_tenant`` store leaves them to its parent)."""
        if not self._owns_engine:
            return
        await self.deadline.settle()
        if self._listener is not None:
            await self._listener.close()
        if self._signals is not None:
            self._signals.close()
        await self.engine.dispose()

    def watch(self, key: str) -> contextlib.AbstractContextManager[Signal]:
        """A signal set when ``key`` (a run id, or ``QUEUE``) changes."""
        return self._hub.watch(key)

    async def ping(self) -> None:
        """Reach the database and take its write lock (StoreUnavailable when it is away
        or locked)."""
        async with self.transaction(write=True) as db:
            await db.execute(text("SELECT 1"))

    # Runs -----------------------------------------------------------------------------

    async def create_run(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
    ) -> None:
        """Keep a new run (of this store's tenant; ``record.tenant`` is ignored); with
        ``cap``, only if the store's runs leave room; with ``delivery``, only if no run was
        kept with one of its ids (else DuplicateDelivery), the delivery kept with it; with
        ``thread``, the thread it was asked in. The count, the inserts and the delivery's
        key are one transaction that one process at a time makes (PostgreSQL: an advisory
        lock and the key; SQLite: its write lock), so servers sharing the store never
        overshoot the cap nor start a delivery twice."""
        tenant = self._creating("a run")
        async with self.transaction(write=True, changed=(record.id, QUEUE)) as db:
            if cap is not None:
                await _check_cap(db, cap)
            await db.execute(
                insert(runs).values(
                    id=record.id,
                    tenant=tenant,
                    status=record.status,
                    created=record.created,
                    updated=record.updated,
                    state=record.document,
                )
            )
            if delivery is not None:
                await keep_delivery(db, tenant, delivery, record.id, record.created)
            if thread is not None:
                await keep_thread(db, tenant, thread, record.id, record.created)

    async def save_run(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status; its cancel request, gate decision and
        owner are kept. With ``claim``, only while the run's claim is that one."""
        fenced = [runs.c.claim == claim] if claim is not None else []
        async with self.transaction(write=True, changed=(run_id,)) as db:
            saved = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), *fenced)
                .values(status=status, updated=updated, state=document)
            )
            if saved.rowcount == 0:  # RunTaken if it is there under another claim
                await held_claim(db, self._mine(runs), run_id, claim)

    async def load_run(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        async with self.transaction() as db:
            row = (
                await db.execute(select(runs).where(runs.c.id == run_id, self._mine(runs)))
            ).first()
        return run_record(row) if row is not None else None

    async def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(runs)
                    .where(self._mine(runs))
                    .order_by(runs.c.created.desc())
                    .limit(limit)
                )
            ).all()
        return [run_record(row) for row in rows]

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        async with self.transaction(write=True, changed=(control_key(run_id),)) as db:
            await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs))
                .values(cancel_requested=True)
            )

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False when it was answered already (the first
        answer stands)."""
        async with self.transaction(write=True, changed=(control_key(run_id),)) as db:
            done = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), runs.c.gate_decision.is_(None))
                .values(gate_decision=decision)
            )
        return done.rowcount == 1

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        async with self.transaction(write=True) as db:
            await db.execute(
                update(runs).where(runs.c.id == run_id, self._mine(runs)).values(gate_decision=None)
            )

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event (``data``: it as JSON); returns its sequence number in the run
        (from 1). With ``claim``, only while the run's claim is that one."""
        async with self.transaction(write=True, changed=(run_id,)) as db:
            # the run's row lock numbers its events one writer at a time
            if await held_claim(db, self._mine(runs), run_id, claim) is None:
                raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
            last = (
                await db.execute(
                    select(func.coalesce(func.max(run_events.c.seq), 0)).where(
                        run_events.c.run_id == run_id
                    )
                )
            ).scalar_one()
            if await _same_as_last(db, run_id, int(last), data):
                return int(last)  # a retried append whose first try was kept
            seq = int(last) + 1
            await db.execute(
                insert(run_events).values(run_id=run_id, seq=seq, time=time, type=kind, data=data)
            )
        return seq

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        visible = select(runs.c.id).where(runs.c.id == run_id, self._mine(runs))
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(
                        run_events.c.seq, run_events.c.time, run_events.c.type, run_events.c.data
                    )
                    .where(run_events.c.run_id.in_(visible), run_events.c.seq > after)
                    .order_by(run_events.c.seq)
                )
            ).all()
        return [EventRecord(seq=r.seq, time=r.time, type=r.type, data=r.data) for r in rows]

    # Plumbing -------------------------------------------------------------------------

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
            self._hub.notify(key)
        if self._signals is not None:
            self._signals.send(tuple(changed))

    def _mine(self, table: Table) -> ColumnElement[bool]:
        """The rows this store may see."""
        return true() if self.tenant is None else table.c.tenant == self.tenant

    def _creating(self, what: str) -> str:
        if self.tenant is None:
            raise StoreError(
                f"a store for all tenants cannot create {what}: use store.for_tenant(tenant)"
            )
        return self.tenant


CAP_LOCK = 0x60_1E_CA  # the advisory lock of the run cap (PostgreSQL)


async def _check_cap(db: AsyncConnection, cap: RunCap) -> None:
    """QueueFull unless the store's runs leave ``cap`` room (within the caller's write
    transaction, under the cap's lock)."""
    if db.dialect.name == "postgresql":
        await db.execute(text(f"SELECT pg_advisory_xact_lock({CAP_LOCK})"))
    taken = (
        await db.execute(select(func.count()).where(runs.c.status.in_(cap.statuses)))
    ).scalar_one()
    if int(taken) >= cap.limit:
        raise QueueFull(cap.reason, retry_after=cap.retry_after)


def _unavailable(url: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(
        f"the database {safe_url(url)} cannot be reached: {exc}", retry_after=RETRY_AFTER
    )


async def _same_as_last(db: AsyncConnection, run_id: str, last: int, data: str) -> bool:
    """Whether the run's last event is ``data`` (each event holds its own time, so two
    equal events are one event written twice)."""
    if last == 0:
        return False
    kept = await db.execute(
        select(run_events.c.data).where(run_events.c.run_id == run_id, run_events.c.seq == last)
    )
    return kept.scalar_one_or_none() == data
