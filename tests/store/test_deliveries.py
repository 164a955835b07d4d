"""Webhook deliveries, kept once: a delivery is recorded in the same step as the run it
starts, so the same delivery again (a forge's redelivery or retry, to this server or to
another one of the store, before or after a restart) is refused by the database itself and
names the run the first one started; a delivery whose run could not be kept is not
recorded; old records go with retention."""

from __future__ import annotations

import asyncio
import time

import pytest

from golem.core.errors import DuplicateDelivery, QueueFull
from golem.store import DeliveryRecord, RunCap
from tests.store.conftest import Database, run

FULL = RunCap(statuses=("queued",), limit=0, reason="no room", retry_after=1)


def delivery(*ids: str, source: str = "github") -> DeliveryRecord:
    return DeliveryRecord(source=source, ids=ids)  # type: ignore[arg-type]


async def test_a_delivery_is_kept_with_its_run_and_a_second_one_names_that_run(
    database: Database,
) -> None:
    store = await database.open("acme")
    await store.runs.create(run("run-1"), delivery=delivery("d-1"))
    with pytest.raises(DuplicateDelivery) as again:
        await store.runs.create(run("run-2"), delivery=delivery("d-1"))
    assert again.value.run_id == "run-1"
    assert "run-1" in again.value.message
    assert [r.id for r in await store.runs.newest()] == ["run-1"]
    assert await store.deliveries.find("github", ("d-1",)) == "run-1"
    assert await store.deliveries.find("github", ("d-2",)) is None
    assert await store.deliveries.find("gitlab", ("d-1",)) is None  # another forge's ids


async def test_any_id_of_a_delivery_makes_it_a_duplicate(database: Database) -> None:
    """GitLab gives two: its event's UUID (one per event, whichever hook) and the
    Idempotency-Key (one per delivery, the same on every retry)."""
    store = await database.open()
    await store.runs.create(run("run-1"), delivery=delivery("event-1", "key-1", source="gitlab"))
    for ids in (("event-1", "key-2"), ("event-2", "key-1")):
        with pytest.raises(DuplicateDelivery) as again:
            await store.runs.create(run("run-x"), delivery=delivery(*ids, source="gitlab"))
        assert again.value.run_id == "run-1"
    assert await store.deliveries.find("gitlab", ("event-9", "key-1")) == "run-1"
    await store.runs.create(run("run-2"), delivery=delivery("event-2", "key-2", source="gitlab"))
    assert sorted(r.id for r in await store.runs.newest()) == ["run-1", "run-2"]


async def test_a_delivery_whose_run_was_refused_is_not_recorded(database: Database) -> None:
    store = await database.open()
    with pytest.raises(QueueFull):
        await store.runs.create(run("run-1"), cap=FULL, delivery=delivery("d-1"))
    assert await store.deliveries.find("github", ("d-1",)) is None
    await store.runs.create(run("run-2"), delivery=delivery("d-1"))  # redelivered later
    assert await store.deliveries.find("github", ("d-1",)) == "run-2"


async def test_a_tenants_deliveries_are_its_own(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    await acme.runs.create(run("run-1"), delivery=delivery("d-1"))
    assert await other.deliveries.find("github", ("d-1",)) is None
    await other.runs.create(run("run-2"), delivery=delivery("d-1"))
    assert await other.deliveries.find("github", ("d-1",)) == "run-2"


async def test_one_delivery_racing_to_every_server_of_a_store_starts_one_run(
    database: Database,
) -> None:
    servers = [await database.open() for _ in range(4)]  # each with its own connections

    async def submit(number: int) -> str:
        record = run(f"run-{number}")
        await servers[number % 4].runs.create(record, delivery=delivery("d-raced"))
        return record.id

    ended = await asyncio.gather(*(submit(n) for n in range(12)), return_exceptions=True)
    started = [outcome for outcome in ended if isinstance(outcome, str)]
    duplicates = [outcome for outcome in ended if isinstance(outcome, DuplicateDelivery)]
    assert len(started) == 1, ended
    assert len(duplicates) == 11, ended
    assert {duplicate.run_id for duplicate in duplicates} == set(started)
    assert [r.id for r in await servers[0].runs.newest()] == started


async def test_retention_prunes_old_deliveries_only(database: Database) -> None:
    store = await database.open()
    now = time.time()
    await store.runs.create(run("run-old"), delivery=delivery("d-old"))
    pruned = await (await database.open(None)).deliveries.prune(before=now + 60)
    assert pruned == 1
    await store.runs.create(run("run-new"), delivery=delivery("d-new"))
    assert await (await database.open(None)).deliveries.prune(before=now - 60) == 0
    assert await store.deliveries.find("github", ("d-old",)) is None
    assert await store.deliveries.find("github", ("d-new",)) == "run-new"
