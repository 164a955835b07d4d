"""Claims fence runners, on every store of the contract: each claim and each requeue raises
a run's claim, and a writer holding an older one (a runner whose machine was declared dead
while it still ran) has its state, its events and its checkpoints refused, while the
writer holding the current one goes on; a requeue wakes the old runner's watch."""

from __future__ import annotations

import pytest

from golem.core.errors import RunTaken
from golem.store import Store, control_key
from tests.store.conftest import Database, run


async def _claimed(store: Store) -> int:
    await store.runs.create(run("run-1"))
    record = await store.queue.claim_next("host:1")
    assert record is not None
    return record.claim


async def test_each_claim_and_each_requeue_raise_the_claim(store: Store) -> None:
    first = await _claimed(store)
    assert await store.queue.requeue("run-1", "{}") is True
    requeued = await store.runs.load("run-1")
    assert requeued is not None
    assert requeued.claim == first + 1
    again = await store.queue.claim_next("host:2")
    assert again is not None
    assert again.claim == first + 2


async def test_a_stale_runner_can_write_nothing_of_the_run(store: Store) -> None:
    stale = await _claimed(store)
    await store.checkpoints.save("run-1", "implement", b"the stale runner's", stale)
    assert await store.queue.requeue("run-1", '{"requeued": true}') is True

    with pytest.raises(RunTaken, match="claimed again"):
        await store.runs.save("run-1", status="failed", updated=1.0, document="{}", claim=stale)
    with pytest.raises(RunTaken):
        await store.runs.append_event("run-1", time=1.0, kind="run_end", data="{}", claim=stale)
    with pytest.raises(RunTaken):
        await store.checkpoints.save("run-1", "ship", b"a later node's", stale)
    with pytest.raises(RunTaken):
        await store.checkpoints.delete("run-1", stale)

    kept = await store.runs.load("run-1")
    assert kept is not None
    assert (kept.status, kept.document) == ("queued", '{"requeued": true}')
    assert await store.runs.events("run-1") == []
    checkpoint = await store.checkpoints.load("run-1")
    assert checkpoint is not None
    assert (checkpoint.node, checkpoint.data) == ("implement", b"the stale runner's")


async def test_the_runner_holding_the_current_claim_writes_as_before(store: Store) -> None:
    await _claimed(store)
    await store.queue.requeue("run-1", "{}")
    current = await store.queue.claim_next("host:2")
    assert current is not None

    await store.runs.save("run-1", status="waiting", updated=2.0, document='{"at": "gate"}',
                         claim=current.claim)  # fmt: skip
    assert await store.runs.append_event("run-1", time=2.0, kind="note", data="{}",
                                    claim=current.claim) == 1  # fmt: skip
    await store.checkpoints.save("run-1", "implement", b"current", current.claim)
    saved = await store.runs.load("run-1")
    assert saved is not None
    assert (saved.status, saved.document, saved.claim) == ("waiting", '{"at": "gate"}',
                                                           current.claim)  # fmt: skip
    await store.checkpoints.delete("run-1", current.claim)
    assert await store.checkpoints.load("run-1") is None


async def test_a_claim_never_lets_another_tenant_write(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    await acme.runs.create(run("run-1"))
    claimed = await acme.queue.claim_next("host:1")
    assert claimed is not None
    await other.runs.save("run-1", status="failed", updated=1.0, document="{}",
                         claim=claimed.claim)  # fmt: skip
    kept = await acme.runs.load("run-1")
    assert kept is not None
    assert kept.status == "running"


async def test_a_requeue_wakes_whoever_watches_the_runs_control(store: Store) -> None:
    await _claimed(store)
    with store.watch(control_key("run-1")) as control:
        control.clear()
        assert await store.queue.requeue("run-1", "{}") is True
        assert await control.wait(timeout=30) is True
