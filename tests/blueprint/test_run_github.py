"""`golem run` from a GitHub issue to a GitHub pull request, against a loopback server that
speaks GitHub's REST API: the issue and its discussion feed the agent, the PR and the
comment come back, labels mark an escalation, and the token goes nowhere but the API."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.github_server import GitHubServer
from tests.blueprint.github_runs import (  # noqa: F401 - its fixtures
    REPO,
    TOKEN,
    config,
    github,
)
from tests.blueprint.repos import EXAMPLES, branch_commits, make_remote

pytestmark = pytest.mark.bwrap

SCRIPTS = Path(__file__).parent / "scripts"


async def run(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    remote: Path,
    model: str,
) -> tuple[RunState, RunBook]:
    """The run's end, and its runs (kept in memory: any store of the contract serves)."""
    book = RunBook(MemoryStore())
    runner = Runner(config, engine=engine, store=book.store)
    request = RunRequest(repo=str(remote), issue=f"{REPO}#7", model=model, forge="github")
    return await runner.start(request), book


async def test_an_issue_becomes_a_pull_request_and_a_comment(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    state, book = await run(config, engine, remote, f"scripted:{EXAMPLES / 'calculator-fix.yaml'}")
    assert state.status == "succeeded", state.error
    assert state.title == "add() subtracts its arguments"
    assert "test_calculator.py shows it too" in state.task_text  # the discussion came along
    [pr] = github.pulls(REPO)
    assert (pr["head"]["ref"], pr["base"]["ref"], pr["draft"]) == (state.branch, "main", False)
    assert "Closes #7" in pr["body"]
    assert "| test | `python3 -m unittest -v` | passed |" in pr["body"]
    assert github.comments(REPO, 7)[-1]["body"].startswith(f"golem opened {pr['html_url']}")
    assert state.pr is not None
    assert state.pr.url == pr["html_url"]
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in github.requests)
    leaks = {
        "pr": pr["body"] + pr["title"],
        "commit": "\n".join(branch_commits(remote, state.branch)),
        "trajectories": "".join(Path(t).read_text() for t in state.trajectories),
        "events": "".join(e.model_dump_json() for _, e in await book.events(state.id)),
        "state": (await book.load(state.id)).model_dump_json(),  # type: ignore[union-attr]
    }
    assert [name for name, text in leaks.items() if TOKEN in text] == []


async def test_an_escalation_is_a_labelled_draft_saying_what_fails(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    state, _ = await run(config, engine, remote, f"scripted:{SCRIPTS / 'never.yaml'}")
    assert state.status == "escalated"
    [pr] = github.pulls(REPO)
    assert pr["draft"]
    assert github.labels(REPO, pr["number"]) == ["needs-human"]
    assert "## What still fails" in pr["body"]
    assert "Closes #7" not in pr["body"]
    assert "for a human to finish" in github.comments(REPO, 7)[-1]["body"]
