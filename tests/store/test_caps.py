"""The run cap: servers sharing one store submit at once and the store never holds more
runs than the cap allows (the count and the insert are one step across processes); and a
retried event write is kept once."""

from __future__ import annotations

import asyncio

import pytest

from golem.core.errors import QueueFull
from golem.store import ACTIVE, RunCap
from tests.store.conftest import Database, run

CAP = RunCap(statuses=("queued", *ACTIVE), limit=3, reason="all 3 runners are busy",
             retry_after=7)  # fmt: skip


async def test_servers_submitting_at_once_never_overshoot_the_run_cap(
    database: Database,
) -> None:
    servers = [await database.open(None) for _ in range(2)]  # each with its own connections
    await servers[0].for_tenant("acme").runs.create(run("run-old", status="running"))

    async def submit(number: int) -> None:
        store = servers[number % 2].for_tenant(f"tenant-{number % 3}")
        await store.runs.create(run(f"run-{number:02d}"), cap=CAP)

    ended = await asyncio.gather(*(submit(n) for n in range(16)), return_exceptions=True)
    refused = [outcome for outcome in ended if outcome is not None]
    assert len(refused) == 14  # the running one and two new ones make the cap
    assert all(isinstance(outcome, QueueFull) for outcome in refused), refused
    assert {str(getattr(outcome, "headers", "")) for outcome in refused} == {
        str({"Retry-After": "7"})
    }
    assert await servers[0].runs.count("queued", *ACTIVE) == 3


async def test_a_cap_counts_only_its_statuses(database: Database) -> None:
    store = await database.open()
    await store.runs.create(run("run-done", status="succeeded"))
    queued_only = RunCap(statuses=("queued",), limit=1, reason="queue full", retry_after=1)
    await store.runs.create(run("run-1"), cap=queued_only)
    with pytest.raises(QueueFull):
        await store.runs.create(run("run-2"), cap=queued_only)
    assert sorted(r.id for r in await store.runs.newest()) == ["run-1", "run-done"]


async def test_an_event_written_twice_by_a_retry_is_kept_once(database: Database) -> None:
    store = await database.open()
    await store.runs.create(run("run-1"))
    first = await store.runs.append_event("run-1", time=1.0, kind="note", data='{"n": 1}')
    again = await store.runs.append_event("run-1", time=1.0, kind="note", data='{"n": 1}')
    later = await store.runs.append_event("run-1", time=2.0, kind="note", data='{"n": 2}')
    assert (first, again, later) == (1, 1, 2)
    assert [event.seq for event in await store.runs.events("run-1")] == [1, 2]
