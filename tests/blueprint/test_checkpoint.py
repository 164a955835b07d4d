"""A run whose machine dies resumes on another machine from its checkpoint (the checkout as
its last finished node left it, kept in the store): one commit, one pull request, the
agent's change in it. The second machine is a second state directory with no checkout."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from golem.blueprint import Runner
from golem.blueprint.book import RunBook
from golem.blueprint.checkpoint import Checkpoints
from golem.blueprint.events import NodeStarted, RunEvent
from golem.core.config import GolemConfig
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint.repos import branch_commits
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    events_text,
    pull_requests,
    remote,
    request,
    store,
)

pytestmark = pytest.mark.bwrap


async def test_a_run_resumes_on_another_machine_from_its_last_checkpoint(
    config: GolemConfig,
    engine: Engine,
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    run: list[asyncio.Task[object]] = []

    def die_as_verify_starts(event: RunEvent) -> None:
        if isinstance(event, NodeStarted) and event.node == "verify":
            run[0].cancel()  # the machine goes: nothing after this runs there

    first = Runner(config, engine=engine, store=store, on_event=die_as_verify_starts,
                   checkpoints=Checkpoints())  # fmt: skip
    submitted = await first.submit(request(remote))
    run.append(asyncio.ensure_future(first.run(submitted.id)))
    with contextlib.suppress(asyncio.CancelledError):
        await run[0]
    left = await RunBook(store).load(submitted.id)
    assert left is not None
    assert (left.status, left.current) == ("running", "verify")
    saved = await store.checkpoints.load(submitted.id)
    assert saved is not None
    assert saved.node == "implement"

    other = config.model_copy(update={"state_dir": tmp_path / "other-machine"})
    second = Runner(other, engine=engine, store=store, checkpoints=Checkpoints())
    done = await second.run(submitted.id, resumed=True)

    assert done.status == "succeeded", done.error
    assert Path(done.workspace).is_relative_to(tmp_path / "other-machine")
    assert [step.node for step in done.steps].count("implement") == 1  # not done again
    [pr] = await pull_requests(store)
    assert "+    return a + b" in pr.diff  # the change the first machine's agent made
    assert len(branch_commits(remote, done.branch or "")) == 1
    assert "made again on this machine" in await events_text(store, done.id)
    assert await store.checkpoints.load(done.id) is None  # gone with the run's end


async def test_a_run_resumed_before_any_checkpoint_starts_from_its_prepare(
    config: GolemConfig,
    engine: Engine,
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    first = Runner(config, engine=engine, store=store, checkpoints=Checkpoints())
    submitted = await first.submit(request(remote))
    other = config.model_copy(update={"state_dir": tmp_path / "other-machine"})
    second = Runner(other, engine=engine, store=store, checkpoints=Checkpoints())
    done = await second.run(submitted.id, resumed=True)
    assert done.status == "succeeded", done.error
    assert len(await pull_requests(store)) == 1
