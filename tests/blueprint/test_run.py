"""`golem run` end to end, with scripted models against local bare git repositories, in
real boxes: green at once, green in the second fix round, escalated after the cap, gates,
cancelling, and secrets that never reach a PR, a commit, a trajectory or the run's events."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import BoxStarted, GateWaiting, NodeStarted, RunEvent
from golem.core.isolation import Isolation
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint.repos import branch_commits, make_remote
from tests.blueprint.runs import (  # noqa: F401 - its fixtures
    SCRIPTS,
    MakeRunner,
    boxes_of,
    events_text,
    gated,
    make_runner,
    pull_requests,
    remote,
    request,
    store,
)
from tests.forge.conftest import git

pytestmark = pytest.mark.bwrap


async def test_green_on_the_first_try_opens_a_pull_request(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    engine: Engine,
) -> None:
    state = await make_runner().start(request(remote))
    assert state.status == "succeeded", state.error
    assert [step.node for step in state.steps] == [
        "prepare", "hydrate", "install", "setup", "baseline", "implement", "verify", "ship",
        "ci",
    ]  # fmt: skip
    assert (state.rounds, [c.passed for c in state.checks]) == (0, [True])
    [commit] = branch_commits(remote, state.branch)
    assert commit.startswith("fix: the failing tests of the calculator")
    assert f"Golem-Run: {state.id}" in commit
    assert state.pr is not None
    [pr] = await pull_requests(store)
    assert (pr.number, pr.head, pr.base, pr.draft) == (1, state.branch, "main", False)
    assert "+    return a + b" in pr.diff
    assert "| test | `python3 -m unittest -v` | passed |" in pr.body
    assert "Fix rounds used: 0" in pr.body
    assert "On the base commit" not in pr.body  # no check ran there: nothing to claim
    assert all(Path(t).is_file() for t in state.trajectories)
    assert await boxes_of(engine, state) == []  # its box is gone (or wiped back into the pool)
    got = Isolation(tier="container", backend="process")  # what its box got, said everywhere
    assert state.isolation == got
    assert f"isolation: {got}\n" in pr.body
    started = [e for _, e in await RunBook(store).events(state.id) if isinstance(e, BoxStarted)]
    assert [(e.purpose, e.isolation) for e in started][-1] == ("run", got)


async def test_red_then_green_in_the_second_fix_round(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
) -> None:
    state = await make_runner().start(request(remote, f"scripted:{SCRIPTS / 'round2.yaml'}"))
    assert state.status == "succeeded", state.error
    assert state.rounds == 2
    [pr] = await pull_requests(store)
    assert "Fix rounds used: 2" in pr.body
    assert pr.body.count("| test |") == 1
    assert len(branch_commits(remote, state.branch)) == 1
    assert state.summary == "add() adds its arguments"


async def test_still_red_after_the_cap_escalates_to_a_person(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
) -> None:
    state = await make_runner().start(request(remote, f"scripted:{SCRIPTS / 'never.yaml'}"))
    assert state.status == "escalated"
    assert state.rounds == 2
    assert [step.node for step in state.steps][-2:] == ["verify", "escalate"]
    [pr] = await pull_requests(store)
    assert pr.draft
    assert "needs-human" in pr.labels
    assert pr.title.startswith("[needs a human]")
    assert "## What still fails" in pr.body
    assert "AssertionError" in pr.body
    assert len(branch_commits(remote, state.branch)) == 1  # the branch is pushed for them


async def test_a_gate_approved_by_a_person_lets_the_run_ship(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    answers: list[asyncio.Future[bool]] = []

    def approve_when_asked(event: RunEvent) -> None:
        if isinstance(event, GateWaiting):
            answers.append(asyncio.ensure_future(store.runs.decide_gate(event.run_id, "approved")))

    runner = make_runner(approve_when_asked)
    state = await runner.start(request(remote, blueprint=gated(tmp_path, 600)))
    assert state.status == "unverified"  # a person approved it; no check verified it
    assert [(s.node, s.outcome) for s in state.steps][-2:] == [
        ("approve", "approved"), ("ship", "success"),
    ]  # fmt: skip


async def test_a_gate_nobody_answers_ends_with_its_default(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    state = await make_runner().start(request(remote, blueprint=gated(tmp_path, 0.2)))
    assert state.status == "escalated"
    assert [(s.node, s.outcome) for s in state.steps][-2:] == [
        ("approve", "rejected"), ("escalate", "success"),
    ]  # fmt: skip


async def test_cancelling_mid_run_stops_it_and_leaves_no_box(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    engine: Engine,
) -> None:
    requests: list[asyncio.Future[None]] = []

    def cancel_at_implement(event: RunEvent) -> None:
        if isinstance(event, NodeStarted) and event.node == "implement":
            requests.append(asyncio.ensure_future(store.runs.request_cancel(event.run_id)))

    runner = make_runner(cancel_at_implement)
    slow = f"scripted:{SCRIPTS / 'slow.yaml'}"
    state = await asyncio.wait_for(runner.start(request(remote, slow)), 60)
    assert state.status == "cancelled"
    assert state.current == "implement"
    assert await boxes_of(engine, state) == []
    assert await pull_requests(store) == []


async def test_secrets_reach_no_pr_commit_trajectory_or_event(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "deploy-secret-0123456789"  # noqa: S105 - a test value
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    blueprint = tmp_path / "leaky.yaml"
    source = (Path(__file__).parents[2] / "src/golem/blueprint/builtin/minion.yaml").read_text()
    blueprint.write_text(source.replace("nodes:", "box: {secrets_env: [DEPLOY_TOKEN]}\nnodes:", 1))
    leaky = f"scripted:{SCRIPTS / 'leaky.yaml'}"
    state = await make_runner().start(request(remote, leaky, blueprint=str(blueprint)))
    assert state.status == "succeeded", state.error
    [pr] = await pull_requests(store)
    places = {
        "pr": pr.body + pr.diff + pr.title,
        "commits": "\n".join(branch_commits(remote, state.branch)),
        "trajectories": "".join(Path(t).read_text() for t in state.trajectories),
        "events": await events_text(store, state.id),
        "state": (await RunBook(store).load(state.id)).model_dump_json(),  # type: ignore[union-attr]
    }
    assert {name: secret in text for name, text in places.items()} == dict.fromkeys(places, False)
    assert "token=***" in places["trajectories"]


@pytest.mark.parametrize("script", ["leak-into-file.yaml", "leak-binary.yaml"])
async def test_a_change_that_holds_a_secret_is_never_pushed(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    script: str,
) -> None:
    secret = "deploy-secret-9876543210"  # noqa: S105 - a test value
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    blueprint = tmp_path / "leaky.yaml"
    source = (Path(__file__).parents[2] / "src/golem/blueprint/builtin/minion.yaml").read_text()
    blueprint.write_text(source.replace("nodes:", "box: {secrets_env: [DEPLOY_TOKEN]}\nnodes:", 1))
    leak = f"scripted:{SCRIPTS / script}"
    state = await make_runner().start(request(remote, leak, blueprint=str(blueprint)))
    assert state.status == "failed"
    assert state.error is not None
    assert "golem does not push it" in state.error
    assert git("branch", "--list", state.branch, cwd=remote) == ""  # nothing pushed
    assert await pull_requests(store) == []
    assert secret not in await events_text(store, state.id)


async def test_a_submodule_checked_out_in_the_box_is_not_taken_back(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)  # noqa: F811 - fixtures, imported above
    work = reachable_dir / "with-submodule"
    git("clone", "-q", str(remote), str(work))
    head = git("rev-parse", "HEAD", cwd=work).strip()
    git("update-index", "--add", "--cacheinfo", f"160000,{head},lib", cwd=work)
    (work / ".gitmodules").write_text('[submodule "lib"]\n\tpath = lib\n\turl = ./lib\n')
    git("add", ".gitmodules", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "lib", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    model = f"scripted:{SCRIPTS / 'touch-submodule.yaml'}"
    state = await make_runner().start(request(remote, model))
    assert state.status == "succeeded", state.error
    changed = git("diff", "--name-only", f"main..{state.branch}", cwd=remote).split()
    assert changed == ["calculator.py"]


async def test_a_run_without_task_or_issue_is_refused(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    from golem.core import InvalidRequest

    with pytest.raises(InvalidRequest, match="--task or --issue"):
        await make_runner().submit(RunRequest(repo=str(remote)))


def test_states_serialise_for_the_store(remote: Path) -> None:  # noqa: F811 - fixtures, imported above
    state = RunState(id="run-x", request=request(remote), blueprint="minion", blueprint_source="")
    assert RunState.model_validate_json(state.model_dump_json()) == state
