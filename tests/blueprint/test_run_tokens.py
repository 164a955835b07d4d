"""Runs that outlive their forge tokens, against loopback forges that issue tokens which
expire (src/golem/testing/github_app_server.py, src/golem/testing/gitlab_oauth_server.py) and git
servers that take only tokens still valid: the token golem held when the run started stops
working while the agent works, and the run still pushes and opens its pull request with a
fresh one. A GitLab refresh token revoked mid-run fails the run with what to fix, and
keeps its commit and branch for a resume."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import AgentStep, RunEvent
from golem.core import GolemConfig, load_config
from golem.sandbox import Engine
from golem.store import MemoryStore
from golem.testing.git_http_server import GitHttpServer
from golem.testing.github_app_server import AppAuthority
from golem.testing.github_server import GitHubServer
from golem.testing.gitlab_oauth_server import OAuthAuthority
from golem.testing.gitlab_server import GitLabServer
from tests.blueprint.repos import EXAMPLES, branch_commits, git, make_remote

pytestmark = pytest.mark.bwrap

REPO = "octo/calculator"
MODEL = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
ISSUE = ("add() subtracts its arguments", "`add(2, 3)` gives -1. See calculator.py.")


def served_remote(reachable_dir: Path, owner: str) -> Path:
    """``owner/calculator.git`` under ``reachable_dir/served``, open to pushes over HTTP."""
    (reachable_dir / "served" / owner).mkdir(parents=True)
    remote = make_remote(reachable_dir / "served" / owner)
    git("config", "http.receivepack", "true", cwd=remote)
    return remote


def has_branch(remote: Path, branch: str) -> bool:
    """Whether the bare ``remote`` has ``branch``."""
    argv = ["git", "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"]
    return subprocess.run(argv, cwd=remote, check=False).returncode == 0


def when_the_agent_works(act: Callable[[], None]) -> Callable[[RunEvent], None]:
    """An event sink that does ``act`` once, when the agent's first step is reported."""
    done: list[bool] = []

    def sink(event: RunEvent) -> None:
        if isinstance(event, AgentStep) and not done:
            done.append(True)
            act()

    return sink


async def leaks(book: RunBook, state: RunState, secrets: list[str]) -> list[str]:
    """Where any of ``secrets`` shows in what the run kept."""
    kept = {
        "events": "".join(e.model_dump_json() for _, e in await book.events(state.id)),
        "state": (await book.load(state.id)).model_dump_json(),  # type: ignore[union-attr]
    }
    return [where for where, text in kept.items() for secret in secrets if secret in text]


@pytest.fixture
def app() -> AppAuthority:
    """App 42 on octo/calculator; its installation tokens live 60 s."""
    return AppAuthority(42, installations={REPO: 7}, lifetime=60)


@pytest.fixture
def github(app: AppAuthority) -> Iterator[GitHubServer]:
    with GitHubServer(app=app) as server:
        server.add_issue(REPO, 7, *ISSUE)
        server.ci = lambda repo, sha: [{"name": "test", "conclusion": "success"}]
        yield server


async def test_a_run_that_outlives_its_app_token_pushes_and_opens_its_pr(
    config: GolemConfig,
    engine: Engine,
    app: AppAuthority,
    github: GitHubServer,
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    remote = served_remote(reachable_dir, "octo")
    data = config.model_dump(mode="json")
    data["forge"] = {
        "provider": "github",
        "github": {
            "api_url": github.api_url, "app_id": app.app_id,
            "private_key": str(app.key_file(tmp_path)),
        },
    }  # fmt: skip
    with GitHttpServer(reachable_dir / "served", app.accepts) as served:
        book = RunBook(MemoryStore())
        runner = Runner(
            load_config(data, files=[]), engine=engine, store=book.store,
            on_event=when_the_agent_works(app.expire_all),
        )  # fmt: skip
        request = RunRequest(
            repo=served.url_for(f"{REPO}.git"), issue=f"{REPO}#7", model=MODEL, forge="github"
        )

        state = await runner.start(request)

    assert state.status == "succeeded", state.error
    assert branch_commits(remote, state.branch)  # pushed, over HTTP, with a fresh token
    [pr] = github.pulls(REPO)
    assert (pr["head"]["ref"], state.pr and state.pr.url) == (state.branch, pr["html_url"])
    first, *later = app.tokens()
    assert later  # the run needed a token its first one could not be
    pushed = [r for r in served.requests if r.method == "POST" and "receive-pack" in r.path]
    assert pushed
    assert first not in {served.token_of(r) for r in pushed}
    assert await leaks(book, state, app.tokens()) == []


@pytest.fixture
def oauth() -> OAuthAuthority:
    return OAuthAuthority()


@pytest.fixture
def gitlab(oauth: OAuthAuthority) -> Iterator[GitLabServer]:
    with GitLabServer(oauth=oauth) as server:
        server.add_issue("group/calculator", 7, *ISSUE)
        server.ci = lambda project, sha: [{"name": "test", "status": "success"}]
        yield server


def gitlab_config(
    config: GolemConfig,
    gitlab: GitLabServer,
    oauth: OAuthAuthority,
    monkeypatch: pytest.MonkeyPatch,
) -> GolemConfig:
    """The host's GitLab OAuth grant, in the variables golem.toml names."""
    access, refresh = oauth.authorise()
    for name, value in (
        ("GOLEM_TEST_OAUTH_ACCESS", access),
        ("GOLEM_TEST_OAUTH_REFRESH", refresh),
        ("GOLEM_TEST_OAUTH_SECRET", str(oauth.client_secret)),
    ):
        monkeypatch.setenv(name, value)
    data = config.model_dump(mode="json")
    data["forge"] = {
        "provider": "gitlab",
        "gitlab": {
            "base_url": gitlab.base_url, "token_env": "GOLEM_TEST_OAUTH_ACCESS",
            "refresh_token_env": "GOLEM_TEST_OAUTH_REFRESH", "token_for_git": True,
            "oauth_client_id": oauth.client_id,
            "oauth_client_secret_env": "GOLEM_TEST_OAUTH_SECRET",
        },
    }  # fmt: skip
    return load_config(data, files=[])


async def test_a_gitlab_401_mid_run_is_refreshed_and_the_run_ships(
    config: GolemConfig,
    engine: Engine,
    oauth: OAuthAuthority,
    gitlab: GitLabServer,
    reachable_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remote = served_remote(reachable_dir, "group")
    with GitHttpServer(reachable_dir / "served", oauth.accepts, username="oauth2") as served:
        book = RunBook(MemoryStore())
        runner = Runner(
            gitlab_config(config, gitlab, oauth, monkeypatch), engine=engine, store=book.store,
            on_event=when_the_agent_works(oauth.revoke_access),
        )  # fmt: skip
        request = RunRequest(
            repo=served.url_for("group/calculator.git"), issue="group/calculator#7",
            model=MODEL, forge="gitlab",
        )  # fmt: skip

        state = await runner.start(request)

    assert state.status == "succeeded", state.error
    assert branch_commits(remote, state.branch)
    [mr] = gitlab.merge_requests("group/calculator")
    assert mr["source_branch"] == state.branch
    assert oauth.refreshes == 1  # one refresh served git and the API alike
    assert await leaks(book, state, [*oauth.access_tokens(), *oauth.refresh_tokens()]) == []


async def test_a_refresh_token_revoked_mid_run_fails_it_saying_what_to_fix_and_resumes_after(
    config: GolemConfig,
    engine: Engine,
    oauth: OAuthAuthority,
    gitlab: GitLabServer,
    reachable_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remote = served_remote(reachable_dir, "group")
    with GitHttpServer(reachable_dir / "served", oauth.accepts, username="oauth2") as served:
        book = RunBook(MemoryStore())
        runner = Runner(
            gitlab_config(config, gitlab, oauth, monkeypatch), engine=engine, store=book.store,
            on_event=when_the_agent_works(oauth.revoke_all),
        )  # fmt: skip
        request = RunRequest(
            repo=served.url_for("group/calculator.git"), issue="group/calculator#7",
            model=MODEL, forge="gitlab",
        )  # fmt: skip

        state = await runner.start(request)

        assert state.status == "failed"
        assert state.error is not None
        assert "authorise golem's OAuth application again" in state.error
        assert f"`golem runs resume {state.id}` goes on from ship" in state.error
        assert state.commit is not None  # the work is committed in the run's checkout
        assert f"commit {state.commit[:12]} on branch {state.branch} in {state.workspace}" in (
            state.error
        )
        workspace = Path(state.workspace)
        assert git("rev-parse", state.branch, cwd=workspace).strip() == state.commit
        assert not has_branch(remote, state.branch)  # nothing half-pushed
        assert gitlab.merge_requests("group/calculator") == []

        fixed = gitlab_config(config, gitlab, oauth, monkeypatch)  # the person authorised again
        resumed = await Runner(fixed, engine=engine, store=book.store).resume(state.id)

    assert resumed.status == "succeeded", resumed.error
    assert resumed.commit == state.commit  # the same work, not done again
    assert branch_commits(remote, state.branch)
    [mr] = gitlab.merge_requests("group/calculator")
    assert mr["source_branch"] == state.branch
