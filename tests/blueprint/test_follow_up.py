"""Follow-up runs with the local forge, in real boxes against local bare repositories: a
pull request golem opened gets a review comment; the follow-up run (a scripted model)
changes the file on the same branch, replies, and says what it pushed. A fork's pull
request is refused, a branch that moved on the remote is never forced over, and a resumed
run does not reply twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import NodeStarted, RunEvent
from golem.core import GolemConfig
from golem.forge import LocalForge, PullRequest, PullRequestDraft
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint.legacy_blueprints import written_before
from tests.blueprint.repos import git, push_fixed_branch
from tests.blueprint.runs import (
    FIX,
    SCRIPTS,
    MakeRunner,
    events_text,
    make_runner,
    remote,
    request,
    store,
)

__all__ = ["make_runner", "remote", "store"]  # fixtures

pytestmark = pytest.mark.bwrap

ANSWER = f"scripted:{SCRIPTS / 'follow-up.yaml'}"
SECRET = "deploy-secret-0123456789"  # noqa: S105 - a test value (the script says it)
ASKED = "Please say in add()'s docstring that it takes ints too."


def follow_up(remote: Path, blueprint: str | None = None, **fields: object) -> RunRequest:
    """A follow-up of pull request 1 (its blueprint chosen by the request unless named)."""
    asked = {"repo": str(remote), "number": 1, "request": ASKED, **fields}
    named = {"blueprint": blueprint} if blueprint is not None else {}
    return RunRequest.model_validate(
        {"repo": str(remote), "model": ANSWER, "follow_up": asked, **named}
    )


def with_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The follow-up blueprint with a box secret (the script's reply quotes it)."""
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)
    path = tmp_path / "follow-up.yaml"
    source = (Path(__file__).parents[2] / "src/golem/blueprint/builtin/follow-up.yaml").read_text()
    path.write_text(source.replace("nodes:", "box: {secrets_env: [DEPLOY_TOKEN]}\nnodes:", 1))
    return str(path)


async def opened_pull_request(make_runner: MakeRunner, remote: Path) -> RunState:
    """A minion run that fixes the calculator and opens pull request 1."""
    parent = await make_runner().start(request(remote, FIX))
    assert parent.status == "succeeded", parent.error
    return parent


async def pushed_pull_request(store: Store, remote: Path, *, fork: bool = False) -> PullRequest:
    """A branch pushed by hand (add() fixed) and a pull request for it, without a run."""
    push_fixed_branch(remote, remote.parent / "by-hand")
    draft = PullRequestDraft(
        repo=str(remote), base="main", head="golem/fix-add", title="Fix add()", body="fixes add"
    )
    pr = await LocalForge(store).open_pull_request(draft)
    if fork:
        marked = pr.model_copy(update={"fork": True})
        await store.forge.update_pull_request(pr.repo, pr.number, marked.model_dump_json())
    return pr


async def conversation(store: Store, pr: PullRequest) -> list[str]:
    return [c.body for c in await LocalForge(store).comments(pr.as_issue())]


async def test_a_follow_up_pushes_a_new_commit_on_the_branch_and_replies(
    make_runner: MakeRunner,
    remote: Path,
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = await opened_pull_request(make_runner, remote)
    forge = LocalForge(store)
    pr = await forge.fetch_pull_request(str(remote), 1)
    await forge.comment(pr.as_issue(), ASKED)
    before = git("rev-parse", parent.branch, cwd=remote).strip()

    blueprint = with_secret(tmp_path, monkeypatch)
    state = await make_runner().start(follow_up(remote, blueprint, parent_run=parent.id))

    assert state.status == "succeeded", state.error
    assert (state.branch, state.base) == (parent.branch, "main")
    assert state.title == f"Follow-up on {pr.title}"
    assert state.request.follow_up is not None
    assert state.request.follow_up.parent_run == parent.id
    assert "add() subtracted its arguments" in state.task_text  # the parent run said so
    assert state.task_text.count(ASKED) == 2  # the request, and the conversation
    assert "+    return a + b" in state.task_text  # the PR's diff
    log = git("log", "--format=%H %P", f"main..{parent.branch}", cwd=remote).splitlines()
    assert len(log) == 2
    assert log[0].split()[1] == before  # the new commit is on top of the old one, untouched
    assert "ints work too" in git("show", f"{parent.branch}:calculator.py", cwd=remote)
    said = await conversation(store, pr)
    assert said[-3:] == [
        "Documented that add() takes ints too.",
        "Checked with *** as asked.",
        f"golem pushed {state.commit[:12] if state.commit else ''}: "
        "add() documents that it takes ints",
    ]
    assert all(reply.posted for reply in state.replies)
    kept = (await RunBook(store).load(state.id)).model_dump_json()  # type: ignore[union-attr]
    assert SECRET not in "".join(said) + await events_text(store, state.id) + kept
    assert SECRET not in "".join(Path(t).read_text() for t in state.trajectories)
    assert "there is no review thread 'no-such-thread'" in await events_text(store, state.id)
    assert [p.number for p in await forge.pull_requests()] == [1]  # no second PR


async def test_a_fork_pull_request_is_refused(
    make_runner: MakeRunner, remote: Path, store: Store
) -> None:
    await pushed_pull_request(store, remote, fork=True)
    state = await make_runner().start(follow_up(remote))
    assert state.status == "failed"
    assert state.error is not None
    assert "comes from a fork" in state.error
    assert [step.node for step in state.steps] == []


async def test_a_branch_moved_on_the_remote_is_a_clear_failure_and_nothing_is_forced(
    make_runner: MakeRunner, remote: Path, store: Store, config: GolemConfig, engine: Engine
) -> None:
    await pushed_pull_request(store, remote)
    person = remote.parent / "by-hand"

    def push_meanwhile(event: RunEvent) -> None:
        if isinstance(event, NodeStarted) and event.node == "implement":
            (person / "NOTES.md").write_text("a person's note\n")
            git("add", "NOTES.md", cwd=person)
            git("commit", "-qm", "a person's commit", cwd=person)
            git("push", "-q", "origin", "golem/fix-add", cwd=person)

    runner = Runner(config, engine=engine, store=store, on_event=push_meanwhile)
    state = await runner.start(follow_up(remote))
    assert state.status == "failed"
    assert state.error is not None
    assert "moved on the remote" in state.error
    head = git("log", "-1", "--format=%s", "golem/fix-add", cwd=remote).strip()
    assert head == "a person's commit"  # their commit stands


async def test_a_resumed_follow_up_posts_only_the_replies_not_yet_posted(
    make_runner: MakeRunner, remote: Path, store: Store
) -> None:
    """Its record made before the follow-up actions: its blueprint names ship, which a
    follow-up runs as answer_review."""
    pr = await pushed_pull_request(store, remote)
    state = await make_runner().start(follow_up(remote))
    assert (state.status, state.blueprint) == ("succeeded", "follow-up"), state.error
    said = await conversation(store, pr)
    assert said.count("Documented that add() takes ints too.") == 1

    book = RunBook(store)
    crashed = state.model_copy(deep=True)
    crashed.status, crashed.current, crashed.owner_pid = "running", "ship", None
    crashed.replies[-1].posted = False  # its runner died before posting the last one
    crashed.blueprint_source = written_before(crashed.blueprint_source)
    assert "action: ship\n" in crashed.blueprint_source
    await book.save(crashed)
    resumed = await make_runner().resume(state.id)

    assert resumed.status == "succeeded", resumed.error
    again = await conversation(store, pr)
    assert again.count("Documented that add() takes ints too.") == 1
    assert again.count("Checked with deploy-secret-0123456789 as asked.") == 2
    assert resumed.commit == state.commit is not None
    assert again[-1] == f"golem pushed {state.commit[:12]}: add() documents that it takes ints"
    assert len(git("log", "--format=%H", "main..golem/fix-add", cwd=remote).split()) == 2


async def broken_pull_request(store: Store, remote: Path) -> PullRequest:
    """A pull request whose branch's add() subtracts again (a fixer has work)."""
    pr = await pushed_pull_request(store, remote)
    work = remote.parent / "by-hand"
    git("revert", "--no-edit", "HEAD", cwd=work)
    git("push", "-q", "origin", "golem/fix-add", cwd=work)
    return pr


async def test_an_agent_that_replied_nowhere_answers_the_request_with_its_summary(
    make_runner: MakeRunner, remote: Path, store: Store
) -> None:
    pr = await broken_pull_request(store, remote)
    asked = follow_up(remote).model_copy(update={"model": FIX})  # an agent without reply
    state = await make_runner().start(asked)
    assert state.status == "succeeded", state.error
    said = await conversation(store, pr)
    summary = "add() subtracted its arguments; it now adds them. All 3 tests pass."
    assert said[-2:] == [summary, f"golem pushed {(state.commit or '')[:12]}: {summary}"]


async def test_a_follow_up_still_red_hands_the_pull_request_to_a_person(
    make_runner: MakeRunner, remote: Path, store: Store
) -> None:
    pr = await broken_pull_request(store, remote)
    never = f"scripted:{SCRIPTS / 'never.yaml'}"
    state = await make_runner().start(follow_up(remote).model_copy(update={"model": never}))
    assert state.status == "escalated", state.error
    assert [step.node for step in state.steps][-2:] == ["verify", "escalate"]
    assert "needs-human" in (await LocalForge(store).fetch_pull_request(pr.repo, 1)).labels
    pushed, handed = (await conversation(store, pr))[-2:]
    assert pushed == f"golem pushed {(state.commit or '')[:12]}: still no idea"
    assert handed.startswith("golem stops here: a person should take this pull request over")
    assert state.commit is not None
    assert git("rev-parse", "golem/fix-add", cwd=remote).strip() == state.commit
