"""A runner that died between opening its pull request and saving the run's state: the
resumed run finds the pull request of its own branch and adopts it (no second one, no
PullRequestExists)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint import Runner
from golem.blueprint.book import RunBook
from golem.checks import CheckResult
from golem.core.config import GolemConfig
from golem.core.errors import StoreUnavailable
from golem.forge import LocalForge, PullRequest, PullRequestDraft
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    MakeRunner,
    events_text,
    make_runner,
    pull_requests,
    remote,
    request,
    store,
)

pytestmark = pytest.mark.bwrap


async def test_a_run_resumed_after_it_opened_its_pull_request_adopts_it(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
) -> None:
    done = await make_runner().start(request(remote))
    assert done.status == "succeeded", done.error
    assert done.pr is not None
    book = RunBook(store)
    crashed = await book.load(done.id)
    assert crashed is not None
    assert [step.node for step in crashed.steps][-2:] == ["ship", "ci"]
    # The state its runner last saved: the PR was open on the forge, not yet in the state.
    crashed.pr, crashed.status, crashed.current = None, "running", "ship"
    crashed.steps, crashed.ci = crashed.steps[:-2], []
    await book.save(crashed)

    resumed = await make_runner().resume(done.id)
    assert resumed.status == "succeeded", resumed.error
    assert resumed.pr is not None
    assert (resumed.pr.number, resumed.pr.url) == (done.pr.number, done.pr.url)
    assert [pr.number for pr in await pull_requests(store)] == [done.pr.number]


class AwayAtTheFirstPullRequest(LocalForge):
    """The local forge, whose store is away the first time a pull request is recorded."""

    refused = 0

    async def open_pull_request(
        self, draft: PullRequestDraft, *, diff: str = "", checks: list[CheckResult] | None = None
    ) -> PullRequest:
        if not self.refused:
            self.refused += 1
            raise StoreUnavailable("the database did not answer within 10s")
        return await super().open_pull_request(draft, diff=diff, checks=checks)


async def test_a_node_that_meets_the_store_away_runs_again_and_the_run_succeeds(
    config: GolemConfig,
    engine: Engine,
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
) -> None:
    forge = AwayAtTheFirstPullRequest(store)
    done = await Runner(config, engine=engine, store=store, forge=forge).start(request(remote))
    assert forge.refused == 1
    assert done.status == "succeeded", done.error
    assert done.pr is not None
    assert [pr.number for pr in await pull_requests(store)] == [done.pr.number]
    assert "runs again once the store is back" in await events_text(store, done.id)
