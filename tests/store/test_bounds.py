"""A store whose database does not answer: every call gives up within the store's timeout
with StoreUnavailable (503, Retry-After) instead of hanging, and the store works again once
the database answers. The fault is a lock another connection holds: SQLite's write lock
(WAL: reads go on), PostgreSQL's ACCESS EXCLUSIVE lock on the runs table (every call on
it waits, as on a frozen server)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import get_type_hints

import psycopg
import pytest
from sqlalchemy.engine import make_url

from golem.core.errors import StoreUnavailable
from golem.store import SqlStore, Store
from golem.store.bounds import StoreDeadline
from golem.store.database import open_engine
from golem.store.notify import Hub
from golem.store.repository import SqlDatabase
from tests.faultdb import SqliteLock
from tests.store.conftest import Database, run


@contextlib.contextmanager
def locked(database: Database) -> Iterator[None]:
    """The database's runs locked by another connection for the block."""
    if database.kind == "sqlite":
        lock = SqliteLock(Path(str(make_url(database.url).database)))
        lock.hold()
        try:
            yield
        finally:
            lock.release()
        return
    libpq = make_url(database.url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(libpq) as other, other.transaction():
        other.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        yield


async def test_a_locked_database_fails_calls_in_time_then_answers_again(sql: Database) -> None:
    await (await sql.open()).runs.create(run("run-1"))
    store = await SqlStore.connect(sql.url, timeout=1)
    sql.opened.append(store)
    with locked(sql):
        with pytest.raises(StoreUnavailable) as refused:
            await store.runs.save("run-1", status="running", updated=1.0, document="{}")
        assert refused.value.http_status == 503
        assert refused.value.headers == {"Retry-After": "5"}
        assert "database_timeout" in refused.value.message or "locked" in refused.value.message
        with pytest.raises(StoreUnavailable):
            await store.runs.create(run("run-2"))
    await store.runs.save("run-1", status="running", updated=1.0, document="{}")
    await store.ping()
    loaded = await store.runs.load("run-1")
    assert loaded is not None
    assert loaded.status == "running"
    assert [r.id for r in await store.runs.newest()] == ["run-1"]  # the refused run is not kept


def test_every_call_of_every_repository_is_bounded_in_the_sql_store(tmp_path: Path) -> None:
    """Each call of each repository's protocol (and the store's ping) is bounded in the SQL
    store, whichever repository a call moves to; a repository's call that says neither
    retried nor once fails when its module is imported (``bounds.bounded``)."""
    engine = open_engine(f"sqlite:///{tmp_path / 'golem.db'}")
    store = SqlStore(SqlDatabase("sqlite://", engine, Hub(), StoreDeadline(1, "")), tenant=None)
    repositories = {
        name: get_type_hints(member.fget)["return"]
        for name, member in vars(Store).items()
        if isinstance(member, property) and name != "tenant"
    }
    assert len(repositories) == 11
    for name, contract in repositories.items():
        calls = [c for c, m in vars(contract).items() if inspect.iscoroutinefunction(m)]
        assert calls, name
        for call in calls:
            assert hasattr(getattr(getattr(store, name), call), "__wrapped__"), f"{name}.{call}"
    assert hasattr(store._pinger.ping, "__wrapped__")


async def test_closing_the_store_waits_for_the_calls_it_gave_up_on(sql: Database) -> None:
    """A worker cancelled mid-call at shutdown leaves its call running in the driver: the
    store's close waits for it, so no call outlives the connections (a process waiting for
    its tasks at exit hung on one)."""
    await (await sql.open()).runs.create(run("run-1"))
    store = await SqlStore.connect(sql.url, timeout=5)
    before = asyncio.all_tasks()
    with locked(sql):
        caller = asyncio.ensure_future(
            store.runs.save("run-1", status="running", updated=1.0, document="{}")
        )
        started = asyncio.all_tasks() - before - {caller}
        while not started:  # the bounded call's own task: created once the caller runs
            await asyncio.wait({caller}, timeout=0.01)
            started = asyncio.all_tasks() - before - {caller}
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
    await store.close()
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    assert not left, f"store calls still running after close: {left}"
