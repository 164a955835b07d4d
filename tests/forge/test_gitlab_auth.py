"""GitLab's tokens: git gets the one for the remote's host (GitLab's as ``oauth2``, GitHub's
as ``x-access-token``, another host none), tested against ``git http-backend`` on loopback;
and a tenant's runs get the tenant's own GitLab token, never another's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.config import GolemConfig
from golem.core.errors import MissingForgeToken
from golem.forge import ForgeConfig, ForgeCredentials, GitHubConfig, GitLabConfig, GitRepo, git_auth
from golem.service.forge_access import ForgeAccess
from golem.store import MemoryStore, TokenCipher
from golem.testing.git_http_server import GitHttpServer
from tests.forge.conftest import AUTHOR, git, seed_bare

GITLAB_TOKEN = "glpat-golemGitTest0123456789"  # noqa: S105 (test tokens)
GITHUB_TOKEN = "ghp_golemGitTest0123456789abc"  # noqa: S105
TOKEN_ENV = "GOLEM_TEST_GITLAB_TOKEN"  # noqa: S105 (a variable's name)
TENANT = ForgeCredentials(
    github=GITHUB_TOKEN, gitlab=GITLAB_TOKEN, source="tenant acme", host_git=False
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitHttpServer]:
    """group/demo.git behind a GitLab-like git server that wants oauth2:GITLAB_TOKEN."""
    bare = seed_bare(tmp_path / "served" / "group", "demo.git")
    git("config", "http.receivepack", "true", cwd=bare)
    with GitHttpServer(tmp_path / "served", GITLAB_TOKEN, username="oauth2") as server:
        yield server


def test_git_gets_the_token_of_the_remotes_forge() -> None:
    config = ForgeConfig(gitlab=GitLabConfig(base_url="https://gitlab.corp.example"))

    on_gitlab = git_auth(config, "https://gitlab.corp.example/group/sub/demo.git", TENANT)
    on_github = git_auth(config, "https://github.com/octo/demo.git", TENANT)

    assert on_gitlab is not None
    assert (on_gitlab.tokens.secrets(), on_gitlab.username) == ([GITLAB_TOKEN], "oauth2")
    assert on_github is not None
    assert (on_github.tokens.secrets(), on_github.username) == ([GITHUB_TOKEN], "x-access-token")
    for elsewhere in (
        "https://gitlab.com/group/demo.git",  # not this configuration's GitLab
        "https://evil.example/group/demo.git",
        "git@gitlab.corp.example:group/demo.git",
        "/srv/repos/demo.git",
    ):
        assert git_auth(config, elsewhere, TENANT) is None


def test_a_forge_without_its_own_token_gets_none_of_the_others() -> None:
    config = ForgeConfig()
    only_github = ForgeCredentials(github=GITHUB_TOKEN, host_git=False)
    only_gitlab = ForgeCredentials(gitlab=GITLAB_TOKEN, host_git=False)

    assert git_auth(config, "https://gitlab.com/group/demo.git", only_github) is None
    assert git_auth(config, "https://github.com/octo/demo.git", only_gitlab) is None


def test_the_hosts_gitlab_token_reaches_git_only_with_token_for_git(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, GITLAB_TOKEN)
    quiet = ForgeConfig(gitlab=GitLabConfig(token_env=TOKEN_ENV))
    given = ForgeConfig(gitlab=GitLabConfig(token_env=TOKEN_ENV, token_for_git=True))
    url = "https://gitlab.com/group/demo.git"

    assert ForgeCredentials.from_config(quiet).secrets() == [GITLAB_TOKEN]
    assert git_auth(quiet, url) is None  # the host's own git credentials answer
    auth = git_auth(given, url)
    assert auth is not None
    assert auth.tokens.secrets() == [GITLAB_TOKEN]


def test_two_forges_on_one_host_are_told_apart_by_port() -> None:
    config = ForgeConfig(
        github=GitHubConfig(api_url="http://127.0.0.1:8001"),
        gitlab=GitLabConfig(base_url="http://127.0.0.1:8002"),
    )

    on_gitlab = git_auth(config, "http://127.0.0.1:8002/group/demo.git", TENANT)
    on_github = git_auth(config, "http://127.0.0.1:8001/octo/demo.git", TENANT)

    assert on_gitlab is not None
    assert on_gitlab.tokens.secrets() == [GITLAB_TOKEN]
    assert on_github is not None
    assert on_github.tokens.secrets() == [GITHUB_TOKEN]
    assert git_auth(config, "http://127.0.0.1:8003/group/demo.git", TENANT) is None


async def test_clone_and_push_to_gitlab_with_the_oauth2_token(
    served: GitHttpServer, tmp_path: Path
) -> None:
    url = served.url_for("group/demo.git")
    config = ForgeConfig(
        github=GitHubConfig(api_url="https://ghe.example.com/api/v3"),
        gitlab=GitLabConfig(base_url=served.url),
    )
    auth = git_auth(config, url, TENANT)
    repo = GitRepo(tmp_path / "work", auth=auth, host_credentials=False)
    await repo.clone_from(url)
    await repo.checkout_branch("golem/t")
    (repo.path / "a.txt").write_text("a\n")
    sha = await repo.commit_all("a", *AUTHOR)

    await repo.push("golem/t")

    assert git("rev-parse", "golem/t", cwd=served.root / "group" / "demo.git") == sha
    assert {r.authorization for r in served.requests} == {served.expected_authorization()}
    assert await repo.remote_url() == url
    assert GITLAB_TOKEN not in (repo.path / ".git" / "config").read_text()


async def test_a_tenants_runs_get_its_own_gitlab_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOLEM_TEST_SERVER_GITLAB", "glpat-server-own")
    config = GolemConfig.model_validate(
        {
            "state_dir": str(tmp_path / "state"),
            "forge": {"gitlab": {"token_env": "GOLEM_TEST_SERVER_GITLAB"}},
            "server": {"shared_forge_tenants": ["shared"]},
        }
    )
    store = MemoryStore()
    access = ForgeAccess(config, store)
    cipher = TokenCipher.from_config(config)
    await store.for_tenant("acme").credentials.put("gitlab", GITLAB_TOKEN, cipher)

    acme = await access.require("acme", "gitlab", "run r1")
    shared = await access.require("shared", "gitlab", "run r2")

    assert (acme.secrets(), acme.github, acme.host_git) == ([GITLAB_TOKEN], None, False)
    assert shared.secrets() == ["glpat-server-own"]
    with pytest.raises(MissingForgeToken, match=r"GitLab token.*--forge gitlab"):
        await access.require("other", "gitlab", "run r3")
    with pytest.raises(MissingForgeToken, match=r"needs a GitHub token"):
        await access.require("acme", "github", "run r4")
    assert (await access.require("other", "local", "run r5")).secrets() == []


def test_the_gitlab_triggers_tenant_shares_the_servers_token_by_default(tmp_path: Path) -> None:
    config = GolemConfig.model_validate(
        {
            "state_dir": str(tmp_path / "state"),
            "server": {"gitlab": {"tenant": "gl-team"}, "github": {"tenant": "gh-team"}},
        }
    )
    access = ForgeAccess(config, MemoryStore())

    assert access.shares_server_token("gl-team")
    assert access.shares_server_token("gh-team")
    assert not access.shares_server_token("default")
