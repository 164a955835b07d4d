"""Paused runs on every store of the contract: a paused run waits with its resume time,
owned by nobody, and is queued again once (and only once) that time comes, whichever
server asks; a stale runner cannot pause it, another tenant cannot touch it."""

from __future__ import annotations

import pytest

from golem.core.errors import RunTaken
from golem.store import QUEUE, RESUME, Store
from tests.store.conftest import Database, run


async def paused_run(store: Store, run_id: str, resume_at: float) -> int:
    """A claimed run of ``store``'s, paused until ``resume_at``; its claim."""
    await store.runs.create(run(run_id))
    claimed = await store.queue.claim_next("here:1")
    assert claimed is not None
    await store.queue.pause(
        run_id, resume_at=resume_at, updated=1.0, document='{"paused": true}',
        claim=claimed.claim,
    )  # fmt: skip
    return claimed.claim


async def test_a_paused_run_waits_owned_by_nobody_until_its_time_then_is_queued_once(
    database: Database,
) -> None:
    store, everyone = await database.open("acme"), await database.open(None)
    claim = await paused_run(store, "run-1", resume_at=1000.0)
    kept = await store.runs.load("run-1")
    assert kept is not None
    assert (kept.status, kept.owner, kept.document) == ("waiting", None, '{"paused": true}')
    assert await everyone.queue.next_resume() == 1000.0

    assert await everyone.queue.resume_due(999.0) == []
    with everyone.watch(QUEUE) as queued:
        assert await everyone.queue.resume_due(1000.0) == ["run-1"]
        assert await queued.wait(10)
    assert await everyone.queue.resume_due(1000.0) == []  # once, whoever asks again
    resumed = await store.runs.load("run-1")
    assert resumed is not None
    assert (resumed.status, resumed.claim) == ("queued", claim + 1)
    assert await everyone.queue.next_resume() is None
    with pytest.raises(RunTaken):  # its old runner writes nothing more
        await store.runs.save("run-1", status="running", updated=2.0, document="{}", claim=claim)


async def test_a_pause_wakes_the_servers_timers_and_a_stale_runner_cannot_pause(
    database: Database,
) -> None:
    store = await database.open("acme")
    with store.watch(RESUME) as paused:
        claim = await paused_run(store, "run-1", resume_at=50.0)
        assert await paused.wait(10)
    await store.queue.resume_due(60.0)
    with pytest.raises(RunTaken):
        await store.queue.pause("run-1", resume_at=70.0, updated=3.0, document="{}", claim=claim)
    kept = await store.runs.load("run-1")
    assert kept is not None
    assert kept.status == "queued"


async def test_a_tenant_neither_pauses_nor_resumes_another_tenants_run(
    database: Database,
) -> None:
    mine, theirs = await database.open("acme"), await database.open("rival")
    await paused_run(mine, "run-1", resume_at=10.0)
    await theirs.queue.pause("run-1", resume_at=99.0, updated=5.0, document="{}")
    assert await theirs.queue.resume_due(100.0) == []
    assert await theirs.queue.next_resume() is None
    kept = await mine.runs.load("run-1")
    assert kept is not None
    assert (kept.status, kept.document) == ("waiting", '{"paused": true}')
    assert await mine.queue.next_resume() == 10.0
