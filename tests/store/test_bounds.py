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

import psycopg
import pytest
from sqlalchemy.engine import make_url

from golem.core.errors import StoreUnavailable
from golem.store import SqlStore, Store
from golem.store.bounds import ONCE, RETRIED
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
    await (await sql.open()).create_run(run("run-1"))
    store = await SqlStore.connect(sql.url, timeout=1)
    sql.opened.append(store)
    with locked(sql):
        with pytest.raises(StoreUnavailable) as refused:
            await store.save_run("run-1", status="running", updated=1.0, document="{}")
        assert refused.value.http_status == 503
        assert refused.value.headers == {"Retry-After": "5"}
        assert "database_timeout" in refused.value.message or "locked" in refused.value.message
        with pytest.raises(StoreUnavailable):
            await store.create_run(run("run-2"))
    await store.save_run("run-1", status="running", updated=1.0, document="{}")
    await store.ping()
    loaded = await store.load_run("run-1")
    assert loaded is not None
    assert loaded.status == "running"
    assert [r.id for r in await store.list_runs()] == ["run-1"]  # the refused run is not kept


def test_every_call_of_the_store_contract_is_bounded() -> None:
    calls = {
        name
        for name, member in vars(Store).items()
        if inspect.iscoroutinefunction(member) and name != "close"
    }
    assert calls - (RETRIED | ONCE) == set()
    assert not RETRIED & ONCE
    assert (RETRIED | ONCE) - calls == set()


async def test_closing_the_store_waits_for_the_calls_it_gave_up_on(sql: Database) -> None:
    """A worker cancelled mid-call at shutdown leaves its call running in the driver: the
    store's close waits for it, so no call outlives the connections (a process waiting for
    its tasks at exit hung on one)."""
    await (await sql.open()).create_run(run("run-1"))
    store = await SqlStore.connect(sql.url, timeout=5)
    before = asyncio.all_tasks()
    with locked(sql):
        caller = asyncio.ensure_future(
            store.save_run("run-1", status="running", updated=1.0, document="{}")
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
