"""The run queue in the store, on every store of the contract: claims are fair across
tenants and never take one run twice; runs of a dead server go back in the queue; a queued
run can be cancelled before it starts."""

from __future__ import annotations

import asyncio

from golem.store import Store
from tests.store.conftest import Database, run


async def test_the_tenant_with_fewer_runs_in_progress_goes_first(database: Database) -> None:
    everyone = await database.open(None)
    busy, quiet = everyone.for_tenant("busy"), everyone.for_tenant("quiet")
    for number in range(3):
        await busy.runs.create(run(f"run-busy-{number}", created=100.0 + number))
    await quiet.runs.create(run("run-quiet", created=200.0))

    claimed = [await everyone.queue.claim_next("host:1") for _ in range(3)]
    assert [r.id for r in claimed if r] == ["run-busy-0", "run-quiet", "run-busy-1"]
    assert claimed[0] is not None
    assert (claimed[0].status, claimed[0].owner) == ("running", "host:1")
    assert await everyone.runs.count("running") == 3
    assert await busy.runs.count("queued") == 1
    assert await quiet.runs.count("queued") == 0


async def test_servers_claiming_at_once_never_take_a_run_twice(database: Database) -> None:
    store = await database.open()
    for number in range(12):
        await store.runs.create(run(f"run-{number:02d}", created=float(number)))

    async def claim(server: int) -> list[str]:
        own = await database.open(None)  # a connection pool of its own, as a server has
        taken = []
        while (claimed := await own.queue.claim_next(f"host:{server}")) is not None:
            taken.append(claimed.id)
        return taken

    servers = await asyncio.gather(*(claim(server) for server in range(4)))
    claimed = [run_id for server in servers for run_id in server]
    assert sorted(claimed) == [f"run-{number:02d}" for number in range(12)]
    assert await store.queue.claim_next("host:9") is None


async def test_a_run_in_progress_is_requeued_without_its_owner(store: Store) -> None:
    await store.runs.create(run("run-1"))
    assert await store.queue.claim_next("host:1") is not None
    assert [r.id for r in await store.runs.active()] == ["run-1"]

    assert await store.queue.requeue("run-1", '{"requeued": true}') is True
    again = await store.runs.load("run-1")
    assert again is not None
    assert (again.status, again.owner, again.document) == ("queued", None, '{"requeued": true}')
    assert await store.queue.requeue("run-1", "{}") is False  # queued, not in progress
    assert await store.runs.active() == []
    reclaimed = await store.queue.claim_next("host:2")
    assert reclaimed is not None
    assert reclaimed.owner == "host:2"


async def test_a_queued_run_is_cancelled_before_it_starts_and_never_claimed(store: Store) -> None:
    await store.runs.create(run("run-1"))
    assert await store.queue.cancel_queued("run-1", '{"cancelled": true}') is True
    cancelled = await store.runs.load("run-1")
    assert cancelled is not None
    assert (cancelled.status, cancelled.cancel_requested) == ("cancelled", True)
    assert cancelled.document == '{"cancelled": true}'
    assert await store.queue.claim_next("host:1") is None
    assert await store.queue.cancel_queued("run-1", "{}") is False  # no longer queued


async def test_another_tenant_cannot_cancel_or_requeue_a_run(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    await acme.runs.create(run("run-1"))
    assert await other.queue.cancel_queued("run-1", "{}") is False
    assert await acme.queue.claim_next("host:1") is not None
    assert await other.queue.requeue("run-1", "{}") is False
    loaded = await acme.runs.load("run-1")
    assert loaded is not None
    assert loaded.status == "running"
