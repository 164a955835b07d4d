"""Runs and their events in the store, on every store of the contract (in memory, SQLite,
PostgreSQL): documents kept exactly, the columns other processes write surviving the
runner's saves, events numbered per run, and tenants kept apart."""

from __future__ import annotations

import pytest

from golem.core.errors import RunNotFound, StoreError
from golem.store import Store
from tests.store.conftest import Database, run


async def test_a_run_round_trips_and_lists_newest_first(store: Store) -> None:
    await store.runs.create(run("run-1", created=100.0))
    await store.runs.create(run("run-2", created=101.0))
    await store.runs.save("run-1", status="running", updated=102.5, document='{"x": 1}')
    loaded = await store.runs.load("run-1")
    assert loaded is not None
    assert (loaded.status, loaded.updated, loaded.document) == ("running", 102.5, '{"x": 1}')
    assert (loaded.tenant, loaded.created) == ("default", 100.0)
    assert [r.id for r in await store.runs.newest()] == ["run-2", "run-1"]
    assert [r.id for r in await store.runs.newest(limit=1)] == ["run-2"]
    assert await store.runs.load("run-nope") is None


async def test_large_documents_with_any_text_round_trip_exactly(store: Store) -> None:
    document = '{"context": "' + "naïve café ✓ 🦀 end\\n" * 250_000 + '"}'  # 5 MB
    record = run("run-1", created=1_700_000_000.123456).model_copy(update={"document": document})
    await store.runs.create(record)
    loaded = await store.runs.load("run-1")
    assert loaded is not None
    assert (loaded.document, loaded.created) == (document, 1_700_000_000.123456)


async def test_a_cancel_from_another_store_survives_the_runners_saves(database: Database) -> None:
    runner, other = await database.open(), await database.open()
    await runner.runs.create(run("run-1"))
    await other.runs.request_cancel("run-1")
    await runner.runs.save("run-1", status="running", updated=1.0, document="{}")
    loaded = await runner.runs.load("run-1")
    assert loaded is not None
    assert (loaded.status, loaded.cancel_requested) == ("running", True)


async def test_a_gate_is_answered_once_and_cleared(store: Store) -> None:
    await store.runs.create(run("run-1"))
    assert await store.runs.decide_gate("run-1", "approved") is True
    assert await store.runs.decide_gate("run-1", "rejected") is False  # the first answer stands
    loaded = await store.runs.load("run-1")
    assert loaded is not None
    assert loaded.gate_decision == "approved"
    await store.runs.clear_gate("run-1")
    cleared = await store.runs.load("run-1")
    assert cleared is not None
    assert cleared.gate_decision is None


async def test_events_are_numbered_per_run_and_read_from_an_offset(store: Store) -> None:
    for run_id in ("run-1", "run-2"):
        await store.runs.create(run(run_id))
    assert await store.runs.append_event("run-1", time=1.0, kind="note", data='{"m": 1}') == 1
    assert await store.runs.append_event("run-2", time=1.0, kind="note", data='{"m": 2}') == 1
    assert await store.runs.append_event("run-1", time=2.0, kind="node_start", data="{}") == 2
    events = await store.runs.events("run-1")
    assert [(e.seq, e.type, e.data) for e in events] == [(1, "note", '{"m": 1}'),
                                                         (2, "node_start", "{}")]  # fmt: skip
    assert [e.seq for e in await store.runs.events("run-1", after=1)] == [2]


async def test_an_event_for_an_unknown_run_is_refused(store: Store) -> None:
    with pytest.raises(RunNotFound, match="no run 'run-nope'"):
        await store.runs.append_event("run-nope", time=1.0, kind="note", data="{}")


async def test_a_tenant_sees_and_changes_only_its_own_runs(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    everyone = await database.open(None)
    await acme.runs.create(run("run-a"))
    await acme.runs.append_event("run-a", time=1.0, kind="note", data="{}")
    await other.runs.create(run("run-o"))

    assert await other.runs.load("run-a") is None
    assert [r.id for r in await other.runs.newest()] == ["run-o"]
    assert await other.runs.events("run-a") == []
    await other.runs.request_cancel("run-a")
    assert await other.runs.decide_gate("run-a", "rejected") is False
    await other.runs.save("run-a", status="failed", updated=1.0, document="{}")
    with pytest.raises(RunNotFound):
        await other.runs.append_event("run-a", time=1.0, kind="note", data="{}")

    mine = await acme.runs.load("run-a")
    assert mine is not None
    assert (mine.status, mine.cancel_requested, mine.gate_decision) == ("queued", False, None)
    assert [e.seq for e in await acme.runs.events("run-a")] == [1]
    assert {r.id for r in await everyone.runs.newest()} == {"run-a", "run-o"}
    found = await everyone.runs.load("run-a")
    assert found is not None
    assert found.tenant == "acme"
    assert [r.id for r in await everyone.for_tenant("other").runs.newest()] == ["run-o"]


async def test_a_store_for_all_tenants_creates_nothing(database: Database) -> None:
    everyone = await database.open(None)
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.runs.create(run("run-1"))
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.forge.add_pull_request("a", 1.0, lambda number: "{}")
    await everyone.for_tenant("acme").runs.create(run("run-1"))
    found = await everyone.runs.load("run-1")
    assert found is not None
    assert found.tenant == "acme"
