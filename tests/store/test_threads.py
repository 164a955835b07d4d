"""Where chat sources asked for runs (a Slack thread and the run's status message there),
kept with the run in the step that keeps it; and deliveries handled without a run (a
refusal said once), on every store of the contract. A delivery handled once is handled
once by any process of the store; a run's end is reported by one caller only; a tenant's
threads are its own; a run refused (the queue full, the delivery seen) keeps no thread."""

from __future__ import annotations

import asyncio
import time

import pytest

from golem.core.errors import DuplicateDelivery, QueueFull
from golem.store import DeliveryRecord, RunCap, ThreadRecord
from tests.store.conftest import Database, run

FULL = RunCap(statuses=("queued",), limit=0, reason="no room", retry_after=1)
THREAD = "T0001:C0001:1700000000.000100"


def slack(*ids: str) -> DeliveryRecord:
    return DeliveryRecord(source="slack", ids=ids)


def thread(name: str = THREAD, **fields: object) -> ThreadRecord:
    return ThreadRecord(source="slack", thread=name, **fields)  # type: ignore[arg-type]


async def test_a_thread_is_kept_with_its_run_and_lists_its_runs_newest_first(
    database: Database,
) -> None:
    store = await database.open("acme")
    await store.runs.create(run("run-1", created=100.0), thread=thread(detail='{"u": 1}'))
    await store.runs.create(run("run-2", created=200.0), thread=thread())
    await store.runs.create(run("run-3", created=300.0), thread=thread("T0001:C0001:9.1"))
    runs = await store.threads.runs_in("slack", THREAD)
    assert [t.run_id for t in runs] == ["run-2", "run-1"]
    assert {t.tenant for t in runs} == {"acme"}
    assert runs[1].detail == '{"u": 1}'
    found = await store.threads.of_run("slack", "run-3")
    assert found is not None
    assert (found.thread, found.status, found.reported) == ("T0001:C0001:9.1", None, None)
    assert await store.threads.of_run("linear", "run-3") is None  # another source's names


async def test_a_tenants_threads_are_its_own(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    await acme.runs.create(run("run-1"), thread=thread())
    assert await other.threads.runs_in("slack", THREAD) == []
    assert await other.threads.of_run("slack", "run-1") is None
    assert not await other.threads.set_status("run-1", "1.2")
    assert not await other.threads.report("run-1")
    assert [t.run_id for t in await (await database.open(None)).threads.unreported("slack")] == [
        "run-1"
    ]


async def test_the_status_message_is_kept_once(database: Database) -> None:
    store = await database.open()
    await store.runs.create(run("run-1"), thread=thread())
    assert await store.threads.set_status("run-1", "1700000001.000200")
    assert not await store.threads.set_status("run-1", "1700000002.000300")
    found = await store.threads.of_run("slack", "run-1")
    assert found is not None
    assert found.status == "1700000001.000200"


async def test_a_runs_end_is_reported_by_one_of_many_racing_servers(database: Database) -> None:
    await (await database.open()).runs.create(run("run-1"), thread=thread())
    servers = [await database.open() for _ in range(4)]  # each with its own connections
    taken = await asyncio.gather(*(servers[n % 4].threads.report("run-1") for n in range(12)))
    assert taken.count(True) == 1
    assert await servers[0].threads.unreported("slack") == []


async def test_a_run_refused_keeps_no_thread(database: Database) -> None:
    store = await database.open()
    with pytest.raises(QueueFull):
        await store.runs.create(run("run-1"), cap=FULL, thread=thread())
    await store.runs.create(run("run-2"), delivery=slack("Ev1"), thread=thread())
    with pytest.raises(DuplicateDelivery):
        await store.runs.create(run("run-3"), delivery=slack("Ev1"), thread=thread())
    assert [t.run_id for t in await store.threads.runs_in("slack", THREAD)] == ["run-2"]


async def test_a_delivery_handled_without_a_run_is_handled_once_by_any_server(
    database: Database,
) -> None:
    servers = [await database.open("acme") for _ in range(4)]
    handled = await asyncio.gather(
        *(servers[n % 4].deliveries.handle_once(slack("Ev9", "C1:1.2")) for n in range(12))
    )
    assert handled.count(True) == 1
    assert not await servers[0].deliveries.handle_once(slack("Ev10", "C1:1.2"))  # any of its ids
    assert await servers[0].deliveries.find("slack", ("Ev9",)) is None  # it started no run
    with pytest.raises(DuplicateDelivery) as again:  # nor does it start one later
        await servers[0].runs.create(run("run-1"), delivery=slack("Ev9"))
    assert again.value.run_id == "none"
    assert await (await database.open("other")).deliveries.handle_once(slack("Ev9"))  # its tenant's


async def test_a_delivery_that_started_a_run_is_not_handled_again(database: Database) -> None:
    store = await database.open()
    await store.runs.create(run("run-1"), delivery=slack("Ev1", "C1:1.2"))
    assert not await store.deliveries.handle_once(slack("Ev2", "C1:1.2"))
    assert await store.deliveries.find("slack", ("Ev2", "C1:1.2")) == "run-1"


async def test_retention_forgets_threads_reported_long_ago_only(database: Database) -> None:
    store = await database.open()
    now = time.time()
    await store.runs.create(run("run-1"), thread=thread())
    await store.runs.create(run("run-2"), thread=thread())
    assert await store.threads.report("run-1")
    every = await database.open(None)
    assert await every.threads.prune(before=now - 60) == 0
    assert await every.threads.prune(before=now + 60) == 1
    assert [t.run_id for t in await store.threads.runs_in("slack", THREAD)] == ["run-2"]


def test_a_source_is_named_in_lower_case() -> None:
    for wrong in ("Slack", "", "slack/x", "a" * 17):
        with pytest.raises(ValueError, match="source"):
            DeliveryRecord(source=wrong, ids=("x",))
        with pytest.raises(ValueError, match="source"):
            ThreadRecord(source=wrong, thread="x")
