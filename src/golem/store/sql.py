"""golem's store in SQL: a SQLite file by default, PostgreSQL when a database URL is given.

Its repositories (runs, the queue, checkpoints, deliveries, threads, documents, provider
limits, the local forge's records, forge credentials, API keys) share one ``SqlDatabase``:
the engine, the hub, the calls' deadline and the transaction. The schema is migrated with
Alembic when a store opens, so several processes (a runner, ``golem runs cancel``,
servers) can share one database. Each change a waiter may wait for is announced
(``golem.store.notify``): to this process's hub once committed, and on PostgreSQL with
``NOTIFY`` to the other processes too.

A store acts for one tenant: each of its repositories sees and changes that tenant's
records only. A store for
all tenants (``tenant=None``, the server's own) reads everything and creates nothing;
``for_tenant`` gives a tenant's store on the same connections.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from golem.core.config import GolemConfig
from golem.core.errors import StoreError
from golem.store.api_keys import SqlApiKeys
from golem.store.bounds import StoreDeadline, bounded
from golem.store.checkpoints import SqlCheckpoints
from golem.store.credentials import SqlCredentials
from golem.store.database import DEFAULT_TIMEOUT, migrate, open_engine, safe_url
from golem.store.deliveries import SqlDeliveries
from golem.store.documents import SqlDocuments
from golem.store.forge_records import SqlForgeRecords
from golem.store.notify import Hub, Signal
from golem.store.pending import SqlPending
from golem.store.provider_limits import SqlProviderLimits
from golem.store.queue import SqlQueue
from golem.store.repository import SqlDatabase, SqlRepository
from golem.store.runs import SqlRuns
from golem.store.signals import FileSignals
from golem.store.threads import SqlThreads

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


def _file_signals(engine: AsyncEngine, hub: Hub) -> FileSignals | None:
    """Signals between the processes on a SQLite file (None: PostgreSQL, an in-memory
    SQLite, or a platform without them; waiters then re-check)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or database in (None, "", ":memory:"):
        return None
    if not FileSignals.available():
        return None
    signals = FileSignals(Path(database), hub)
    try:
        signals.start()
    except OSError as exc:
        log.warning("no change signals beside %s (%s): waiters re-check", database, exc)
        signals.close()
        return None
    return signals


class SqlStore:
    """The repositories of one tenant (``default`` outside the server) on one database;
    ``tenant=None``: all tenants'. Open it with ``connect``."""

    def __init__(self, database: SqlDatabase, *, tenant: str | None) -> None:
        self.database = database
        self.tenant = tenant
        self.runs = SqlRuns(database, tenant)
        self.queue = SqlQueue(database, tenant)
        self.checkpoints = SqlCheckpoints(database, tenant)
        self.deliveries = SqlDeliveries(database, tenant)
        self.threads = SqlThreads(database, tenant)
        self.pending = SqlPending(database, tenant)
        self.documents = SqlDocuments(database, tenant)
        self.limits = SqlProviderLimits(database, tenant)
        self.forge = SqlForgeRecords(database, tenant)
        self.credentials = SqlCredentials(database, tenant)
        self.keys = SqlApiKeys(database, tenant)
        self._pinger = _Ping(database, tenant)
        self._listener: PostgresListener | None = None
        self._owns_engine = False

    @property
    def url(self) -> str:
        """The database's URL."""
        return self.database.url

    @property
    def engine(self) -> AsyncEngine:
        """The database's engine."""
        return self.database.engine

    @classmethod
    async def connect(
        cls, url: str, *, tenant: str | None = "default", timeout: float = DEFAULT_TIMEOUT
    ) -> SqlStore:
        """The store at ``url``, its schema migrated, listening for other processes'
        changes (PostgreSQL); each call gives up after ``timeout`` seconds."""
        engine = open_engine(url, timeout=timeout)
        _check_sqlite_directory(engine)
        hub = Hub()
        database = SqlDatabase(url, engine, hub, StoreDeadline(timeout, safe_url(url)))
        store = cls(database, tenant=tenant)
        store._owns_engine = True
        try:
            await migrate(engine)
            if engine.dialect.name == "postgresql":
                # psycopg is imported only for PostgreSQL (a SQLite store's CLI starts faster)
                from golem.store.listener import PostgresListener  # noqa: PLC0415

                store._listener = PostgresListener(url, hub)
                await store._listener.start()
            database.signals = _file_signals(engine, hub)
        except BaseException:
            await engine.dispose()
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
        return SqlStore(self.database, tenant=tenant)

    async def close(self) -> None:
        """Release the connections (a ``for_tenant`` store leaves them to its parent)."""
        if not self._owns_engine:
            return
        await self.database.deadline.settle()
        if self._listener is not None:
            await self._listener.close()
        if self.database.signals is not None:
            self.database.signals.close()
        await self.engine.dispose()

    def watch(self, key: str) -> contextlib.AbstractContextManager[Signal]:
        """A signal set when ``key`` (a run id, or ``QUEUE``) changes."""
        return self.database.hub.watch(key)

    async def ping(self) -> None:
        """Reach the database and take its write lock (StoreUnavailable when it is away
        or locked)."""
        await self._pinger.ping()


@bounded(retried={"ping"}, once=())
class _Ping(SqlRepository):
    """The store's ping, bounded as every call is."""

    async def ping(self) -> None:
        """Reach the database and take its write lock."""
        async with self.transaction(write=True) as db:
            await db.execute(text("SELECT 1"))
