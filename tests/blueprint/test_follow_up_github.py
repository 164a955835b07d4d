"""Follow-up runs against the loopback GitHub: a review thread asks for a change on a pull
request golem opened; the follow-up (a scripted model) changes the file, replies in the
thread, and the branch gets a new commit on top (never forced), the reply goes to the
thread's replies endpoint, review is asked for again and the pull request says what was
pushed. A closed pull request, or a fork's, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.events import NodeStarted, RunEvent
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.github_server import GitHubServer, github_error
from tests.blueprint.follow_up_scripts import answering
from tests.blueprint.github_runs import REPO, config, github  # noqa: F401 - its fixtures
from tests.blueprint.repos import git, make_remote, push_fixed_branch

pytestmark = pytest.mark.bwrap

BRANCH = "golem/fix-add"
ASKED = "@golem please do what alice asks"


@pytest.fixture
def remote(
    reachable_dir: Path,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
) -> Path:
    """The repository with branch golem/fix-add (add() fixed) pushed, as a PR golem opened."""
    remote = make_remote(reachable_dir)
    push_fixed_branch(remote, reachable_dir / "by-hand", BRANCH)
    github.head_sha = lambda repo, branch: git("rev-parse", branch, cwd=remote).strip()
    return remote


async def follow_up(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    remote: Path,
    model: str,
    number: int,
) -> RunState:
    runner = Runner(config, engine=engine, store=MemoryStore())
    asked = {"repo": REPO, "number": number, "requested_by": "alice", "request": ASKED}
    request = RunRequest.model_validate(
        {"repo": str(remote), "model": model, "forge": "github", "follow_up": asked}
    )
    return await runner.start(request)


async def test_a_review_thread_gets_a_new_commit_a_reply_and_a_new_review_request(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    remote: Path,
    tmp_path: Path,
) -> None:
    pr = github.add_pull(REPO, BRANCH, title="Fix add()")
    number = pr["number"]
    root = github.add_review_comment(
        REPO, number, "Say that it takes ints too", author="alice", path="calculator.py", line=5
    )
    settled = github.add_review_comment(REPO, number, "Typo", author="bob", line=1)
    github.resolve(REPO, settled["id"])
    github.add_review(REPO, number, "alice", "CHANGES_REQUESTED", "See my note")
    before = git("rev-parse", BRANCH, cwd=remote).strip()

    state = await follow_up(config, engine, remote, answering(tmp_path, root["id"]), number)

    assert state.status == "succeeded", state.error
    assert f"## Open thread {root['id']} on calculator.py:5" in state.task_text
    assert f"thread {settled['id']} on README.md:1, resolved: bob: Typo" in state.task_text
    assert "- alice requested changes: See my note" in state.task_text
    log = git("log", "--format=%H %P", f"main..{BRANCH}", cwd=remote).splitlines()
    assert [line.split()[1] for line in log[:1]] == [before]  # on top of the old commit
    assert len(log) == 2
    replies = [c for c in github.review_comments(REPO, number) if c.get("in_reply_to_id")]
    assert [(c["in_reply_to_id"], c["body"]) for c in replies] == [
        (root["id"], "Done: the docstring says ints work too.")
    ]
    assert github.requested_reviewers(REPO, number) == ["alice", "bob"]
    said = [c["body"] for c in github.comments(REPO, number)]
    assert said[-1] == f"golem pushed {(state.commit or '')[:12]}: documented ints"
    assert state.pr is not None
    assert state.pr.number == number
    assert [r.posted for r in state.replies] == [True]
    assert [c.verdict for c in state.ci] == ["passed"]  # the ci node watched the new commit


async def test_a_closed_pull_request_is_refused(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    remote: Path,
    tmp_path: Path,
) -> None:
    number = github.add_pull(REPO, BRANCH)["number"]
    github._items[REPO][number]["state"] = "closed"
    state = await follow_up(config, engine, remote, answering(tmp_path, 1), number)
    assert state.status == "failed"
    assert state.error is not None
    assert "is closed or merged" in state.error
    assert len(git("log", "--format=%H", f"main..{BRANCH}", cwd=remote).split()) == 1


async def test_a_fork_pull_request_is_refused(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    remote: Path,
    tmp_path: Path,
) -> None:
    number = github.add_pull(REPO, BRANCH, fork="someone/calculator")["number"]
    state = await follow_up(config, engine, remote, answering(tmp_path, 1), number)
    assert state.status == "failed"
    assert state.error is not None
    assert "comes from a fork" in state.error


async def test_review_threads_unreadable_at_the_agent_step_leave_the_conversation(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    github: GitHubServer,  # noqa: F811 - fixtures, imported above
    remote: Path,
    tmp_path: Path,
) -> None:
    number = github.add_pull(REPO, BRANCH)["number"]
    root = github.add_review_comment(REPO, number, "Say ints work", author="alice", line=5)

    def threads_away(event: RunEvent) -> None:
        if isinstance(event, NodeStarted) and event.node == "implement":
            github.push(github_error(404, "Not Found"))  # the tool's read of the PR

    runner = Runner(config, engine=engine, store=MemoryStore(), on_event=threads_away)
    asked = {"repo": REPO, "number": number, "request": ASKED}
    model = answering(tmp_path, root["id"])
    request = RunRequest.model_validate(
        {"repo": str(remote), "model": model, "forge": "github", "follow_up": asked}
    )
    state = await runner.start(request)

    assert state.status == "succeeded", state.error
    assert [(r.thread, r.body) for r in state.replies] == [(None, "documented ints")]
    assert [c for c in github.review_comments(REPO, number) if c.get("in_reply_to_id")] == []
    assert [c["body"] for c in github.comments(REPO, number)][-2] == "documented ints"
