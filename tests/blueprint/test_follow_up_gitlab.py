"""A follow-up run on GitLab: a discussion on a merge request golem opened asks for a
change; the follow-up pushes a new commit on top over HTTP with GitLab's token, replies in
the discussion, makes the reviewers reviewers again and notes what it pushed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest
from golem.core import GolemConfig, load_config
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.follow_up_scripts import answering
from tests.blueprint.repos import git, make_remote

pytestmark = pytest.mark.bwrap

TOKEN = "glpat-golemFollowUp0123456789"  # noqa: S105 - a test token
PROJECT = "group/calculator"
BRANCH = "golem/fix-add"


def head(remote: Path, branch: str) -> str | None:
    argv = ["git", "rev-parse", "--verify", "-q", branch]
    done = subprocess.run(argv, cwd=remote, capture_output=True, text=True, check=False)
    return done.stdout.strip() or None


@pytest.fixture
def gitlab(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabServer]:
    monkeypatch.setenv("GOLEM_TEST_GITLAB_TOKEN", TOKEN)
    with GitLabServer(token=TOKEN) as server:
        server.ci = lambda project, sha: [{"name": "test", "status": "success"}]
        yield server


@pytest.fixture
def served(reachable_dir: Path) -> Iterator[GitHttpServer]:
    """group/calculator.git over smart HTTP, with branch golem/fix-add (add() fixed)."""
    root = reachable_dir / "served"
    (root / "group").mkdir(parents=True)
    remote = make_remote(root / "group")
    git("config", "http.receivepack", "true", cwd=remote)
    work = reachable_dir / "by-hand"
    git("clone", "-q", str(remote), str(work), cwd=reachable_dir)
    git("checkout", "-q", "-b", BRANCH, cwd=work)
    source = (work / "calculator.py").read_text().replace("return a - b", "return a + b")
    (work / "calculator.py").write_text(source)
    git("commit", "-qam", "fix add", cwd=work)
    git("push", "-q", "origin", BRANCH, cwd=work)
    with GitHttpServer(root, TOKEN, username="oauth2") as server:
        yield server


@pytest.fixture
def config(config: GolemConfig, gitlab: GitLabServer, served: GitHttpServer) -> GolemConfig:
    data = config.model_dump(mode="json")
    data["forge"] = {
        "provider": "gitlab",
        "gitlab": {
            "base_url": gitlab.base_url,
            "token_env": "GOLEM_TEST_GITLAB_TOKEN",
            "token_for_git": True,
        },
    }
    return load_config(data, files=[])


async def test_a_merge_request_discussion_gets_a_new_commit_and_a_reply(
    config: GolemConfig,
    engine: Engine,
    gitlab: GitLabServer,
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
