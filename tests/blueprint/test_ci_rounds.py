"""CI rounds after ship, against the loopback GitHub whose CI judges what was pushed (read
from the local bare remote with git, so the verdict follows the commit, never a clock):
red then green after a CI fix round, red to the cap and handed to a person, silent, a
required check never created, pending forever, a token in a log, a resumed run."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core import GolemConfig, load_config
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.github_server import GitHubServer, github_error
from tests.blueprint.ci_rounds import CI_FIX, ERROR_LINE, SCRIPTS, minion, trajectory
from tests.blueprint.github_runs import (  # noqa: F401 - the loopback GitHub's fixtures
    REPO,
    TOKEN,
    config,
    github,
)
from tests.blueprint.repos import EXAMPLES, branch_commits, git, make_remote

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
Jobs = Callable[[str, str], Sequence[dict[str, Any]]]


def changelog_ci(remote: Path) -> Jobs:
    """A CI whose test job also wants a CHANGELOG.md in the pushed commit."""

    def jobs(repo: str, sha: str) -> list[dict[str, Any]]:
        found = subprocess.run(
            ["git", "cat-file", "-e", f"{sha}:CHANGELOG.md"], cwd=remote, check=False
        )
        if found.returncode == 0:
            return [{"name": "test", "conclusion": "success"}]
        log = (
            "2024-05-01T13:00:00.0000000Z ##[group]Run python3 -m unittest -v\n"
            "2024-05-01T13:00:01.0000000Z OK\n"
            "2024-05-01T13:00:02.0000000Z ##[group]Run ./check-changelog\n"
            f"2024-05-01T13:00:03.0000000Z using token {TOKEN}\n"
            f"2024-05-01T13:00:04.0000000Z {ERROR_LINE}\n"
        )
        steps = [("Set up job", "success"), ("Run tests", "success"), ("Changelog", "failure")]
        return [{"name": "test", "conclusion": "failure", "steps": steps, "log": log}]

    return jobs


async def run(
    config: GolemConfig,  # noqa: F811 - not the fixture: the one a test got
    engine: Engine,
    remote: Path,
    model: str,
    blueprint: str,
) -> tuple[RunState, RunBook]:
    book = RunBook(MemoryStore())
    runner = Runner(config, engine=engine, store=book.store)
    request = RunRequest(
        repo=str(remote), issue=f"{REPO}#7", model=model, forge="github", blueprint=blueprint
    )
    return await runner.start(request), book


async def test_ci_red_once_is_fixed_in_a_ci_round_and_pushed_as_a_second_commit(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    state, book = await run(config, engine, remote, CI_FIX, minion(reachable_dir))
    assert state.status == "succeeded", state.error
    assert [(r.round, r.verdict) for r in state.ci] == [(0, "failed"), (1, "passed")]
    assert state.ci[0].failing == ["test"]
    assert state.ci[0].cost_usd > 0  # the fix after it
    assert state.steps[-1].node == "ci"
    assert state.steps[-1].cost_usd == state.ci[0].cost_usd
    first, second = branch_commits(remote, state.branch)[::-1]
    assert f"Golem-Run: {state.id}" in second
    assert "Golem-CI-Round: 1" in second
    assert "Golem-CI-Round" not in first
    assert state.commit == state.ci[1].commit
    prompt = trajectory(state, "ci")
    assert ERROR_LINE in prompt
    assert "Changelog" in prompt  # the failed step
    assert "passed in golem's box (`python3 -m unittest -v`) but fails in CI" in prompt
    [pr] = github.pulls(REPO)
    assert "CI passes" in github.comments(REPO, pr["number"])[-1]["body"]
    assert "after 1 CI fix round(s)" in github.comments(REPO, pr["number"])[-1]["body"]
    leaks = {
        "trajectories": "".join(Path(t).read_text() for t in state.trajectories),
        "events": "".join(e.model_dump_json() for _, e in await book.events(state.id)),
        "state": (await book.load(state.id)).model_dump_json(),  # type: ignore[union-attr]
    }
    assert [name for name, text in leaks.items() if TOKEN in text] == []


async def test_ci_still_red_after_the_cap_hands_the_pull_request_to_a_person(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    red = f"scripted:{SCRIPTS / 'ci-red.yaml'}"
    state, _ = await run(config, engine, remote, red, minion(reachable_dir, ci_rounds=2))
    assert state.status == "escalated"
    assert state.ci_rounds == 2
    assert [r.verdict for r in state.ci] == ["failed", "failed", "failed"]
    assert [s.node for s in state.steps][-2:] == ["ci", "escalate"]
    assert len(branch_commits(remote, state.branch)) == 3
    [pr] = github.pulls(REPO)
    assert github.labels(REPO, pr["number"]) == ["needs-human"]
    assert state.pr is not None
    assert state.pr.labels == ["needs-human"]
    handed = github.comments(REPO, pr["number"])[-1]["body"]
    assert "CI still fails" in handed
    assert "`test`" in handed
    assert "Changelog" in handed  # its failed step
    assert pr["html_url"] in github.comments(REPO, 7)[-1]["body"]


async def test_a_silent_ci_passes_on_golems_own_checks(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = lambda repo, sha: []
    state, _ = await run(config, engine, remote, FIX, minion(reachable_dir))
    assert state.status == "succeeded", state.error
    assert [r.verdict for r in state.ci] == ["no_ci"]
    assert "golem's own checks stand" in state.steps[-1].detail


async def test_a_silent_ci_escalates_when_the_blueprint_says_so(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = lambda repo, sha: []
    blueprint = minion(reachable_dir, when_silent="escalate")
    state, _ = await run(config, engine, remote, FIX, blueprint)
    assert state.status == "escalated"
    assert [r.verdict for r in state.ci] == ["no_ci"]
    [pr] = github.pulls(REPO)
    assert github.labels(REPO, pr["number"]) == ["needs-human"]
    handed = github.comments(REPO, pr["number"])[-1]["body"]
    assert "CI never judged" in handed
    assert "no CI job was reported within 0.5s" in handed


async def test_a_required_check_never_created_fails_naming_it(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = lambda repo, sha: [{"name": "test", "conclusion": "success"}]
    github.protect(REPO, "main", ["test", "deploy-preview"])
    state, _ = await run(config, engine, remote, FIX, minion(reachable_dir))
    assert state.status == "escalated"
    [last] = state.ci
    assert last.verdict == "missing"
    assert "`deploy-preview`" in last.note
    [pr] = github.pulls(REPO)
    assert "`deploy-preview`" in github.comments(REPO, pr["number"])[-1]["body"]


async def test_a_ci_pending_forever_times_out_naming_what_is_pending(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = lambda repo, sha: [
        {"name": "test", "conclusion": "success"},
        {"name": "integration"},  # in progress, for ever
    ]
    state, _ = await run(config, engine, remote, FIX, minion(reachable_dir))
    assert state.status == "escalated"
    [last] = state.ci
    assert last.verdict == "timed_out"
    assert "`integration`" in last.note
    assert "`test`" not in last.note


async def test_a_resumed_run_pushes_its_ci_fix_once_and_waits_on_it(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    done, book = await run(config, engine, remote, CI_FIX, minion(reachable_dir))
    assert done.status == "succeeded", done.error
    first, fixed = done.ci[0].commit, done.ci[1].commit
    # Its runner died after it committed the CI fix, before it pushed it or saved the round.
    crashed = done.model_copy(deep=True)
    crashed.ci, crashed.ci_rounds, crashed.commit = crashed.ci[:1], 1, first
    crashed.status, crashed.current, crashed.steps = "running", "ci", crashed.steps[:-1]
    await book.save(crashed)
    git("update-ref", f"refs/heads/{done.branch}", first, cwd=remote)

    resumed = await Runner(config, engine=engine, store=book.store).resume(done.id)
    assert resumed.status == "succeeded", resumed.error
    assert [(r.round, r.verdict) for r in resumed.ci] == [(0, "failed"), (1, "passed")]
    assert git("rev-parse", done.branch, cwd=remote).strip() == fixed  # pushed, not made again
    assert len(resumed.trajectories) == len(done.trajectories)  # no agent ran again
    assert len(branch_commits(remote, done.branch)) == 2


async def test_the_local_forge_runs_no_ci_and_the_run_ends_at_once(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    book = RunBook(MemoryStore())
    runner = Runner(config, engine=engine, store=book.store)
    blueprint = minion(reachable_dir, appear=3600, wait=3600)  # it would wait an hour
    request = RunRequest(
        repo=str(remote), task="Fix add()", model=FIX, blueprint=blueprint, forge="local"
    )
    state = await runner.start(request)
    assert state.status == "succeeded", state.error
    [only] = state.ci
    assert (only.verdict, only.note) == ("no_ci", "the local forge runs no CI")
    assert state.steps[-1].detail == "the local forge runs no CI"


async def test_a_forge_away_while_ci_runs_is_asked_again(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    asked: list[str] = []

    def away_once(repo: str, sha: str) -> list[dict[str, Any]]:
        if not asked:  # the next request (the commit's statuses) finds GitHub away
            github.push(github_error(503, "Service Unavailable"))
        asked.append(sha)
        return [{"name": "test", "conclusion": "success"}]

    github.ci = away_once
    data = config.model_dump(mode="json")
    data["forge"]["github"]["max_retries"] = 0
    state, book = await run(
        load_config(data, files=[]), engine, remote, FIX, minion(reachable_dir, wait=3600)
    )
    assert state.status == "succeeded", state.error
    assert [r.verdict for r in state.ci] == ["passed"]
    assert "asking again" in "".join(e.model_dump_json() for _, e in await book.events(state.id))


async def test_a_ci_fix_that_fails_golems_checks_is_not_pushed_and_goes_back_to_the_agent(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    model = f"scripted:{SCRIPTS / 'ci-local-red.yaml'}"
    state, _ = await run(config, engine, remote, model, minion(reachable_dir, ci_rounds=2))
    assert state.status == "succeeded", state.error
    assert state.ci_rounds == 2
    assert [(r.round, r.verdict) for r in state.ci] == [(0, "failed"), (2, "passed")]
    fixed, first = branch_commits(remote, state.branch)  # nothing of round 1 was pushed
    assert "Golem-CI-Round: 2" in fixed
    assert "Golem-CI-Round" not in first
    second_prompt = Path(state.trajectories[-1]).read_text()
    assert "Your last fix was not pushed: golem's own checks failed on it" in second_prompt
    assert ERROR_LINE in second_prompt  # CI's failure still stands


async def test_a_run_resumed_while_waiting_on_ci_waits_on_its_last_commit(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    done, book = await run(config, engine, remote, CI_FIX, minion(reachable_dir))
    assert done.status == "succeeded", done.error
    # Its runner died while CI ran on the fix it had pushed.
    crashed = done.model_copy(deep=True)
    crashed.ci[-1].verdict, crashed.ci[-1].ended = "waiting", None
    crashed.status, crashed.current, crashed.steps = "running", "ci", crashed.steps[:-1]
    await book.save(crashed)
    asked: list[str] = []
    github.ci = lambda repo, sha: asked.append(sha) or changelog_ci(remote)(repo, sha)

    resumed = await Runner(config, engine=engine, store=book.store).resume(done.id)
    assert resumed.status == "succeeded", resumed.error
    assert set(asked) == {done.ci[1].commit}  # only the last round's commit was looked at
    assert [(r.round, r.verdict) for r in resumed.ci] == [(0, "failed"), (1, "passed")]
    assert len(resumed.trajectories) == len(done.trajectories)
    assert len(branch_commits(remote, done.branch)) == 2


async def test_no_box_of_the_run_is_kept_while_ci_runs(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    judge = changelog_ci(remote)
    loop = asyncio.get_running_loop()
    boxes_seen: list[list[str]] = []

    def looking_at_boxes(repo: str, sha: str) -> Sequence[dict[str, Any]]:
        boxes = asyncio.run_coroutine_threadsafe(engine.boxes(), loop).result(timeout=60)
        boxes_seen.append([box.id for box in boxes if "golem.run" in box.labels])
        return judge(repo, sha)

    github.ci = looking_at_boxes
    state, _ = await run(config, engine, remote, CI_FIX, minion(reachable_dir))
    assert state.status == "succeeded", state.error
    assert len(state.ci) == 2  # a fix round's box came and went between the two waits
    assert boxes_seen
    assert all(seen == [] for seen in boxes_seen)


async def test_a_ci_fix_that_changes_nothing_pushes_nothing_and_uses_its_round(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    github.ci = changelog_ci(remote)
    model = f"scripted:{SCRIPTS / 'ci-nothing.yaml'}"
    state, _ = await run(config, engine, remote, model, minion(reachable_dir, ci_rounds=1))
    assert state.status == "escalated"
    assert state.ci_rounds == 1
    assert [r.verdict for r in state.ci] == ["failed"]
    assert len(branch_commits(remote, state.branch)) == 1
