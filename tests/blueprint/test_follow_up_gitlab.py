"""A follow-up run on GitLab: a discussion on a merge request golem opened asks for a
change; the follow-up pushes a new commit on top over HTTP with GitLab's token, replies in
the discussion, makes the reviewers reviewers again and notes what it pushed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.follow_up_scripts import answering
from tests.blueprint.gitlab_runs import (  # noqa: F401 - its fixtures
    PROJECT,
    TOKEN,
    config,
    git_over_http,
    gitlab,
    head,
    served_calculator,
)
from tests.blueprint.repos import git, push_fixed_branch

pytestmark = pytest.mark.bwrap

BRANCH = "golem/fix-add"


@pytest.fixture
def served(reachable_dir: Path) -> Iterator[GitHttpServer]:
    """group/calculator.git over smart HTTP, with branch golem/fix-add (add() fixed)."""
    remote = served_calculator(reachable_dir)
    push_fixed_branch(remote, reachable_dir / "by-hand", BRANCH)
    with git_over_http(reachable_dir) as server:
        yield server


async def test_a_merge_request_discussion_gets_a_new_commit_and_a_reply(
    config: GolemConfig,  # noqa: F811 - fixtures, imported above
    engine: Engine,
    gitlab: GitLabServer,  # noqa: F811 - fixtures, imported above
    served: GitHttpServer,
    tmp_path: Path,
) -> None:
    remote = served.root / "group" / "calculator.git"
    gitlab.head_sha = lambda project, branch: head(remote, branch)
    project = gitlab.project(PROJECT)
    iid = project.new_mr(BRANCH, "main", "Fix add()")["iid"]
    gitlab.add_user("alice")
    asked = project.add_discussion(
        iid, [("alice", "Say that it takes ints too")], path="calculator.py", line=5
    )
    before = head(remote, BRANCH)
    request = RunRequest.model_validate(
        {
            "repo": served.url_for("group/calculator.git"),
            "model": answering(tmp_path, asked["id"]),
            "forge": "gitlab",
            "follow_up": {"repo": PROJECT, "number": iid, "thread": asked["id"]},
        }
    )

    state = await Runner(config, engine=engine, store=MemoryStore()).start(request)

    assert state.status == "succeeded", state.error
    assert f"## Open thread {asked['id']} on calculator.py:5" in state.task_text
    log = git("log", "--format=%H %P", f"main..{BRANCH}", cwd=remote).splitlines()
    assert len(log) == 2
    assert log[0].split()[1] == before  # on top of the old commit, not forced
    replies = [(n["author"]["username"], n["body"]) for n in asked["notes"][1:]]
    assert replies == [("golem-bot", "Done: the docstring says ints work too.")]
    assert [r["username"] for r in project.mrs[iid]["reviewers"]] == ["alice"]
    last = project.discussions[iid][-1]["notes"][0]["body"]
    assert last == f"golem pushed {(state.commit or '')[:12]}: documented ints"
    assert [c.verdict for c in state.ci] == ["passed"]
