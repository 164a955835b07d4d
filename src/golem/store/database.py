"""Opening golem's database: the async engine, SQLite's settings, and migrating the schema.

Several processes open one database at once (a runner, ``golem runs cancel``, servers);
the migration runs under a lock (PostgreSQL: an advisory lock; SQLite: a write
transaction), so it happens once. SQLite's write transactions begin IMMEDIATE, so two
writers queue on the busy timeout instead of failing when one upgrades a read lock.
The engine is SQLAlchemy's asyncio one (aiosqlite, psycopg); Alembic runs on its
connection through ``run_sync``, and is not even imported when the schema is at the newest
revision already (the CLI opens the store for each command: `golem runs ls` starts faster).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from golem.core.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig

__all__ = [
    "DEFAULT_TIMEOUT",
    "WRITE",
    "alembic_config",
    "async_url",
    "head_revision",
    "migrate",
    "open_engine",
    "safe_url",
]

MIGRATION_LOCK = 0x60_1E_A7  # a PostgreSQL advisory lock id of golem's own
WRITE = "golem_write"  # execution option: this connection's transaction writes
DEFAULT_TIMEOUT = 10.0  # seconds a store call may take (database_timeout)
ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+psycopg"}


def safe_url(url: str) -> str:
    """A database URL without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return "<database>"


def async_url(url: str) -> str:
    """``url`` with the asyncio driver of its database (``sqlite://`` takes aiosqlite,
    ``postgresql://`` psycopg)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise ConfigError(f"cannot use database {safe_url(url)}: {exc}") from exc
    driver = ASYNC_DRIVERS.get(parsed.get_backend_name())
    if driver is None:
        raise ConfigError(
            f"cannot use database {safe_url(url)}: golem keeps its state in SQLite or "
            "PostgreSQL (sqlite:///path or postgresql://...)"
        )
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


def _sqlite_settings(timeout: float) -> Callable[[Any, Any], None]:
    def connected(connection: Any, _record: Any) -> None:
        _sqlite_connect(connection, timeout)

    return connected


def _sqlite_connect(connection: Any, timeout: float) -> None:
    connection.isolation_level = None  # golem emits BEGIN itself (see _sqlite_begin)
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")  # a lock waits no longer
    _into_wal(cursor, timeout)  # readers do not block the runner's writes
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _into_wal(cursor: Any, timeout: float) -> None:
    """Switch a new database to WAL. The switch takes an exclusive lock, and SQLite answers
    "database is locked" at once, without its busy handler, when connections opening the
    same new file at the same moment hold shared locks: try again until ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
        except Exception as exc:  # sqlite3's, or the async driver's adapter of it
            if "database is locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        else:
            return
        time.sleep(pause)  # only a new file, opened by several at once, ever waits here
        pause = min(pause * 2, 0.2)


def _sqlite_begin(connection: Connection) -> None:
    writes = connection.get_execution_options().get(WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")


def open_engine(url: str, *, timeout: float = DEFAULT_TIMEOUT) -> AsyncEngine:
    """An async engine for ``url``; SQLite gets WAL, a busy timeout and explicit
    transactions; no connection or lock is waited for longer than ``timeout``."""
    driver_url = async_url(url)
    connect_args: dict[str, Any] = {}
    if driver_url.startswith("postgresql"):
        connect_args["connect_timeout"] = max(1, math.ceil(timeout))
    try:
        engine = create_async_engine(
            driver_url, pool_pre_ping=True, pool_timeout=timeout, connect_args=connect_args
        )
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise ConfigError(f"cannot use database {safe_url(url)}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_settings(timeout))
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
    return engine


def alembic_config() -> AlembicConfig:
    """Alembic's settings for golem's migrations (give it a ``connection`` attribute)."""
    from alembic.config import Config as AlembicConfig  # noqa: PLC0415 - see the docstring

    settings = AlembicConfig()
    settings.set_main_option("script_location", str(files("golem.store") / "migrations"))
    return settings


def head_revision() -> str:
    """The newest revision of golem's migrations, read from their file names: each is
    ``NNNN_what.py`` with ``revision = "NNNN"`` (a test holds them to it and to Alembic's
    own head)."""
    versions = files("golem.store") / "migrations" / "versions"
    return max(f.name[:4] for f in versions.iterdir() if f.name[:4].isdigit())


async def _at_head(engine: AsyncEngine) -> bool:
    """Whether the database's schema is at ``head_revision()`` (False when it has none)."""
    try:
        async with engine.connect() as connection:
            found = await connection.execute(text("SELECT version_num FROM alembic_version"))
            return list(found.scalars()) == [head_revision()]
    except SQLAlchemyError:  # a new database: no alembic_version table yet
        return False


def _upgrade(connection: Connection) -> None:
    from alembic import command  # noqa: PLC0415 - see the module's docstring

    if connection.dialect.name == "postgresql":
        connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
    settings = alembic_config()
    settings.attributes["connection"] = connection
    command.upgrade(settings, "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision, once however many processes try at once."""
    if await _at_head(engine):
        return
    try:
        async with engine.connect() as connection:
            await connection.execution_options(**{WRITE: True})
            async with connection.begin():
                await connection.run_sync(_upgrade)
    except (SQLAlchemyError, OSError) as exc:
        raise StoreError(f"cannot prepare database {safe_url(str(engine.url))}: {exc}") from exc
