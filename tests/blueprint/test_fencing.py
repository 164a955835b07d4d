"""A runner whose run was taken from it (queued again, as a control plane does when the
runner's machine is declared dead while the runner still runs) stops at once with
RunTaken and writes nothing more: the run stays as the requeue left it, no event follows,
its box goes; the runner that claims it next resumes it to one commit and one PR."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from golem.blueprint.book import RunBook
from golem.core.errors import RunTaken
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint.repos import branch_commits
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    MakeRunner,
    boxes_of,
    gated,
    make_runner,
    pull_requests,
    remote,
    request,
    store,
)

pytestmark = pytest.mark.bwrap


async def _waiting(runs: Store, run_id: str) -> None:
    """Return once the run waits at its gate, its question asked, as the store says."""
    book = RunBook(runs)
    with runs.watch(run_id) as changed:
        while True:
            changed.clear()
            state, events = await book.load(run_id), await book.events(run_id)
            asked = bool(events) and events[-1][1].type == "gate_wait"
            if state is not None and state.status == "waiting" and asked:
                return
            await changed.wait()


async def test_a_runner_whose_run_was_queued_again_stops_and_writes_nothing(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    tmp_path: Path,
) -> None:
    book = RunBook(store)
    submitted = await make_runner().submit(request(remote, blueprint=gated(tmp_path, 600)))
    assert await store.queue.claim_next("host:1") is not None
    stale = asyncio.ensure_future(make_runner().run(submitted.id))
    await asyncio.wait_for(_waiting(store, submitted.id), 120)
    before = await book.events(submitted.id)
    at_gate = await book.load(submitted.id)
    assert at_gate is not None
    at_gate.status = "queued"
    assert await store.queue.requeue(submitted.id, at_gate.model_dump_json()) is True

    with pytest.raises(RunTaken, match="another runner has it"):
        await asyncio.wait_for(stale, 120)
    left = await store.runs.load(submitted.id)
    assert left is not None
    assert (left.status, left.document) == ("queued", at_gate.model_dump_json())
    assert await book.events(submitted.id) == before
    assert await boxes_of(engine, at_gate) == []

    claimed = await store.queue.claim_next("host:2")
    assert claimed is not None
    assert await store.runs.decide_gate(submitted.id, "approved") is True  # the gate it resumes at
    done = await asyncio.wait_for(make_runner().run(submitted.id, resumed=True), 120)
    assert done.status == "unverified", done.error
    assert [step.node for step in done.steps].count("implement") == 1
    assert [pr.number for pr in await pull_requests(store)] == [1]
    assert len(branch_commits(remote, done.branch or "")) == 1
    asked = [e for _, e in await book.events(submitted.id) if e.type == "gate_wait"]
    assert len(asked) == 2  # the resumed run says it waits again, at the deadline it had
    assert asked[0].model_dump(exclude={"time"}) == asked[1].model_dump(exclude={"time"})
