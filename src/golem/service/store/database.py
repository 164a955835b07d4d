"""Opening golem's database: the engine, SQLite's settings, and migrating the schema.

Several processes open one database at once (a runner, ``golem runs cancel``, servers);
the migration runs under a lock (PostgreSQL: an advisory lock; SQLite: a write
transaction), so it happens once. SQLite's write transactions begin IMMEDIATE, so two
writers queue on the busy timeout instead of failing when one upgrades a read lock.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import SQLAlchemyError

from golem.core.errors import ConfigError, StoreError

__all__ = [
    "WRITE",
    "alembic_config",
    "migrate",
    "open_engine",
    "safe_url",
]

MIGRATION_LOCK = 0x60_1E_A7  # a PostgreSQL advisory lock id of golem's own
WRITE = "golem_write"  # execution option: this connection's transaction writes


def safe_url(url: str) -> str:
    """A database URL without its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (SQLAlchemyError, ValueError):
        return "<database>"


def _sqlite_connect(connection: Any, _record: Any) -> None:
    connection.isolation_level = None  # golem emits BEGIN itself (see _sqlite_begin)
    cursor = connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the runner's writes
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    writes = connection.get_execution_options().get(WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")


def open_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and explicit transactions."""
    try:
        engine = create_engine(url, pool_pre_ping=True)
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise ConfigError(f"cannot use database {safe_url(url)}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def alembic_config() -> AlembicConfig:
    """Alembic's settings for golem's migrations (give it a ``connection`` attribute)."""
    settings = AlembicConfig()
    settings.set_main_option("script_location", str(files("golem.service.store") / "migrations"))
    return settings


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision, once however many processes try at once."""
    settings = alembic_config()
    try:
        with (
            engine.connect().execution_options(**{WRITE: True}) as connection,
            connection.begin(),
        ):
            if connection.dialect.name == "postgresql":
                connection.execute(text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
            settings.attributes["connection"] = connection
            command.upgrade(settings, "head")
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot prepare database {safe_url(str(engine.url))}: {exc}") from exc
