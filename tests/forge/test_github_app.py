"""A GitHub App's installation tokens, minted per use, against a loopback GitHub that
issues them (src/golem/testing/github_app_server.py) and a git server that takes only those
still valid: a token is reused while fresh, replaced before it expires, replaced after a
401 of the API or of git (a push retried once), and every token minted is masked. A key
GitHub refuses, or an App not installed, says what to fix."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.errors import ForgeCredentialsRefused, GitRemoteError
from golem.forge import ForgeConfig, ForgeCredentials, GitHubConfig, GitRepo, git_auth
from golem.forge.github import GitHubForge
from golem.forge.github_app import GitHubAppTokens
from golem.testing.git_http_server import GitHttpServer
from golem.testing.github_app_server import AppAuthority, new_key_pem
from golem.testing.github_server import GitHubServer
from tests.forge.conftest import AUTHOR, git, seed_bare

REPO = "octo/demo"


class Clock:
    """A wall clock the test moves (both golem and the server read it)."""

    def __init__(self) -> None:
        self.now = time.time()  # where the real one is: a JWT golem signs by it still works

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> AppAuthority:
    """App 42, installed on octo/demo (installation 7); its tokens live 60 s."""
    return AppAuthority(42, installations={REPO: 7}, lifetime=60, clock=clock)


@pytest.fixture
def github(app: AppAuthority) -> Iterator[GitHubServer]:
    with GitHubServer(app=app) as server:
        server.add_issue(REPO, 7, "Fix the parser")
        yield server


def tokens(
    app: AppAuthority, server: GitHubServer, clock: Clock, **kwargs: object
) -> GitHubAppTokens:
    return GitHubAppTokens(
        app.app_id,
        app.private_key,
        api_url=server.api_url,
        clock=clock,
        **kwargs,  # type: ignore[arg-type]
    )


def forge_of(source: GitHubAppTokens, server: GitHubServer) -> GitHubForge:
    credentials = ForgeCredentials(github=source, source="")
    return GitHubForge(GitHubConfig(api_url=server.api_url), credentials=credentials, backoff=0)


def sent(server: GitHubServer) -> list[str]:
    """The installation tokens the API's requests carried, in order."""
    found = [r.headers.get("authorization", "") for r in server.requests]
    return [value.removeprefix("Bearer ") for value in found if value.startswith("Bearer ghs_")]


async def test_a_token_is_minted_for_the_repositorys_installation_and_reused_while_fresh(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    forge = forge_of(tokens(app, github, clock), github)

    await forge.fetch_issue(f"{REPO}#7")
    clock.now += 20  # well within its hour (here: its minute)
    await forge.fetch_issue(f"{REPO}#7")

    [issued] = app.tokens()
    assert set(sent(github)) == {issued}
    paths = [r.path for r in github.requests]
    assert paths.count(f"/repos/{REPO}/installation") == 1  # found once, then known
    assert paths.count("/app/installations/7/access_tokens") == 1


async def test_a_token_near_its_expiry_is_replaced_before_it_is_sent(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    forge = forge_of(tokens(app, github, clock), github)
    await forge.fetch_issue(f"{REPO}#7")

    clock.now += 45  # 15 s left of 60: inside the margin (half its life, at most 5 min)
    await forge.fetch_issue(f"{REPO}#7")

    first, second = app.tokens()
    assert app.refused == []  # never sent a token that was about to lapse
    assert sent(github)[-1] == second != first


async def test_a_token_the_api_refuses_is_replaced_and_the_call_goes_through(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    forge = forge_of(tokens(app, github, clock), github)
    await forge.fetch_issue(f"{REPO}#7")

    app.expire_all()  # revoked, or the server's clock ran ahead: golem still thinks it good
    issue = await forge.fetch_issue(f"{REPO}#7")

    first, second = app.tokens()
    assert issue.title == "Fix the parser"
    assert app.refused[0] == first
    assert sent(github)[-1] == second


async def test_one_refresh_serves_every_call_that_held_the_refused_token(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    source = tokens(app, github, clock)
    stale = await source.token(REPO)

    fresh = await source.refresh(stale, REPO)
    again = await source.refresh(stale, REPO)  # a second caller that held the same token

    assert fresh == again != stale
    assert len(app.tokens()) == 2


@pytest.fixture
def served(tmp_path: Path, app: AppAuthority) -> Iterator[GitHttpServer]:
    """octo/demo.git over smart HTTP, wanting a valid installation token."""
    bare = seed_bare(tmp_path / "served" / "octo", "demo.git")
    git("config", "http.receivepack", "true", cwd=bare)
    with GitHttpServer(tmp_path / "served", app.accepts) as server:
        yield server


def git_login_for(server: GitHubServer, served: GitHttpServer, source: GitHubAppTokens):  # type: ignore[no-untyped-def]
    config = ForgeConfig(github=GitHubConfig(api_url=server.api_url))
    credentials = ForgeCredentials(github=source, source="", host_git=False)
    login = git_auth(config, served.url_for(f"{REPO}.git"), credentials)
    assert login is not None  # an App's tokens reach git whatever token_for_git says
    return login


async def test_a_push_refused_for_an_expired_token_is_retried_once_with_a_fresh_one(
    app: AppAuthority, github: GitHubServer, served: GitHttpServer, clock: Clock, tmp_path: Path
) -> None:
    source = tokens(app, github, clock)
    login = git_login_for(github, served, source)
    repo = GitRepo(tmp_path / "work", auth=login, host_credentials=False)
    await repo.clone_from(served.url_for(f"{REPO}.git"))
    await repo.checkout_branch("golem/fix")
    (repo.path / "fix.txt").write_text("fixed\n")
    sha = await repo.commit_all("fix", *AUTHOR)

    app.expire_all()  # the hour ran out while the agent worked
    await repo.push("golem/fix")

    first, second = app.tokens()
    assert git("rev-parse", "golem/fix", cwd=served.root / "octo" / "demo.git") == sha
    refused = [r for r in served.requests if r.status == 401 and served.token_of(r) == first]
    assert refused  # the push went out with the token golem held, and was refused
    pushed = [r for r in served.requests if r.method == "POST" and "receive-pack" in r.path]
    assert {served.token_of(r) for r in pushed} == {second}


async def test_a_push_refused_again_with_a_fresh_token_fails_after_one_retry(
    app: AppAuthority, github: GitHubServer, tmp_path: Path, clock: Clock
) -> None:
    bare = seed_bare(tmp_path / "closed" / "octo", "demo.git")
    git("config", "http.receivepack", "true", cwd=bare)
    open_door = {"open": True}

    def accepts(token: str) -> bool:
        return open_door["open"] and app.accepts(token)

    with GitHttpServer(tmp_path / "closed", accepts) as closing:
        source = tokens(app, github, clock)
        login = git_login_for(github, closing, source)
        repo = GitRepo(tmp_path / "work", auth=login, host_credentials=False)
        await repo.clone_from(closing.url_for(f"{REPO}.git"))
        open_door["open"] = False  # the App lost its access to the repository

        with pytest.raises(GitRemoteError, match="authenticate"):
            await repo.push("main")

    assert len(app.tokens()) == 2  # one fresh token, one retry: no loop
    pushing = [closing.token_of(r) for r in closing.requests[-4:] if r.status == 401]
    assert set(pushing) == set(app.tokens())


async def test_every_token_minted_is_learnt_by_whoever_masks(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    source = tokens(app, github, clock)
    credentials = ForgeCredentials(github=source, source="")
    learnt: list[str] = []
    credentials.on_minted(learnt.append)

    await source.token(REPO)
    app.expire_all()
    await source.refresh(app.tokens()[0], REPO)

    assert learnt == app.tokens()
    assert set(app.tokens()) <= set(credentials.secrets())
    assert app.private_key in credentials.secrets()


async def test_a_key_that_is_not_the_apps_says_to_generate_a_new_one(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    stranger = GitHubAppTokens(app.app_id, new_key_pem(), api_url=github.api_url, clock=clock)
    forge = forge_of(stranger, github)

    with pytest.raises(ForgeCredentialsRefused) as refused:
        await forge.fetch_issue(f"{REPO}#7")

    assert "Generate a new private key" in refused.value.message
    assert "private_key" in refused.value.message
    assert app.tokens() == []


def test_a_key_file_that_is_no_key_says_what_to_give(tmp_path: Path) -> None:
    pem = tmp_path / "app.pem"
    pem.write_text("ghp_this-is-a-token-not-a-key\n")
    config = GitHubConfig(app_id=42, private_key=str(pem))  # type: ignore[arg-type]

    with pytest.raises(ForgeCredentialsRefused, match=r"\.pem file"):
        GitHubForge(config)


async def test_an_app_not_installed_on_the_repository_says_install_it(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    github.add_issue("elsewhere/demo", 1, "Not ours")
    forge = forge_of(tokens(app, github, clock), github)

    with pytest.raises(ForgeCredentialsRefused, match="not installed on elsewhere/demo"):
        await forge.fetch_issue("elsewhere/demo#1")


async def test_the_hosts_app_comes_from_golem_toml(
    app: AppAuthority, github: GitHubServer, tmp_path: Path
) -> None:
    config = GitHubConfig(
        api_url=github.api_url,
        app_id=app.app_id,
        private_key=str(app.key_file(tmp_path)),  # type: ignore[arg-type]
    )

    issue = await GitHubForge(config).fetch_issue(f"{REPO}#7")

    assert issue.title == "Fix the parser"
    assert sent(github) == app.tokens()[:1] * len(sent(github))


async def test_an_app_travels_to_another_process_and_mints_there(
    app: AppAuthority, github: GitHubServer, clock: Clock
) -> None:
    order = ForgeCredentials(github=tokens(app, github, clock), source="", host_git=False)
    await order.github_tokens.token(REPO)  # type: ignore[union-attr]

    carried = pickle.loads(pickle.dumps(order))  # noqa: S301 - as a run to a cluster's node
    issue = await forge_of(carried.github_tokens, github).fetch_issue(f"{REPO}#7")

    assert issue.title == "Fix the parser"
    assert set(sent(github)) <= set(app.tokens())
