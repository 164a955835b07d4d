"""GitLab OAuth tokens, refreshed per use, against a loopback GitLab whose OAuth provider
spends each refresh token it is given (src/golem/testing/gitlab_oauth_server.py): an access token
is refreshed before it expires and after a 401 of the API or of git; each new grant is kept
before it is used, so another source on the same grant (another run, a restarted server)
adopts it instead of spending a spent refresh token; a refused refresh token or OAuth
application says what to do."""

from __future__ import annotations

import asyncio
import pickle
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.errors import ForgeCredentialsRefused
from golem.forge import ForgeConfig, ForgeCredentials, GitLabConfig, GitRepo, git_auth
from golem.forge.auth import GRANT_FILE
from golem.forge.gitlab import GitLabForge
from golem.forge.gitlab_oauth import GitLabOAuthTokens, StoredGrant
from golem.store import MemoryStore, OAuthGrant, SqlStore, TokenCipher
from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_oauth_server import OAuthAuthority
from golem.testing.gitlab_server import GitLabServer
from tests.forge.conftest import AUTHOR, git, seed_bare

PROJECT = "group/demo"
ACCESS_ENV, REFRESH_ENV, SECRET_ENV = (
    "GOLEM_TEST_GITLAB_ACCESS",
    "GOLEM_TEST_GITLAB_REFRESH",
    "GOLEM_TEST_GITLAB_SECRET",
)


class Clock:
    """A wall clock the test moves (golem and the server read it)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def oauth(clock: Clock) -> OAuthAuthority:
    return OAuthAuthority(clock=clock)


@pytest.fixture
def gitlab(oauth: OAuthAuthority) -> Iterator[GitLabServer]:
    with GitLabServer(oauth=oauth) as server:
        server.add_issue(PROJECT, 7, "Fix the parser")
        yield server


def first_grant(oauth: OAuthAuthority, clock: Clock) -> OAuthGrant:
    access, refresh = oauth.authorise()
    return OAuthGrant(
        access_token=access, refresh_token=refresh, expires_at=clock() + oauth.lifetime,
        client_id=oauth.client_id, client_secret=oauth.client_secret,
    )  # fmt: skip


def source(
    grant: OAuthGrant, server: GitLabServer, clock: Clock, **kwargs: object
) -> GitLabOAuthTokens:
    return GitLabOAuthTokens(grant, base_url=server.base_url, clock=clock, **kwargs)  # type: ignore[arg-type]


def forge_of(tokens: GitLabOAuthTokens, server: GitLabServer) -> GitLabForge:
    credentials = ForgeCredentials(gitlab=tokens, source="")
    return GitLabForge(GitLabConfig(base_url=server.base_url), credentials=credentials, backoff=0)


def bearers(server: GitLabServer) -> list[str]:
    found = [r.headers.get("authorization", "") for r in server.requests]
    return [value.removeprefix("Bearer ") for value in found if value.startswith("Bearer ")]


async def test_a_revoked_access_token_is_refreshed_and_the_call_goes_through(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock
) -> None:
    forge = forge_of(source(first_grant(oauth, clock), gitlab, clock), gitlab)
    await forge.fetch_issue(f"{PROJECT}#7")

    oauth.revoke_access()
    issue = await forge.fetch_issue(f"{PROJECT}#7")

    assert issue.title == "Fix the parser"
    assert oauth.refreshes == 1
    assert bearers(gitlab)[-1] == oauth.access_tokens()[-1]


async def test_an_access_token_near_its_expiry_is_refreshed_before_it_is_sent(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock
) -> None:
    forge = forge_of(source(first_grant(oauth, clock), gitlab, clock), gitlab)
    await forge.fetch_issue(f"{PROJECT}#7")

    clock.now += oauth.lifetime - 120  # two minutes left: inside the five-minute margin
    await forge.fetch_issue(f"{PROJECT}#7")

    assert oauth.refused == []
    assert oauth.refreshes == 1
    assert bearers(gitlab)[-1] == oauth.access_tokens()[-1]


async def test_one_refresh_serves_calls_that_held_the_same_token_at_once(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock
) -> None:
    tokens = source(first_grant(oauth, clock), gitlab, clock)
    stale = await tokens.token()

    fresh = await asyncio.gather(*(tokens.refresh(stale) for _ in range(5)))

    assert set(fresh) == {oauth.access_tokens()[-1]}
    assert oauth.refreshes == 1  # one refresh token spent, not five


async def test_a_refreshed_grant_is_kept_and_another_holder_adopts_it_instead_of_spending(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock, tmp_path: Path
) -> None:
    store = MemoryStore().for_tenant("acme")
    cipher = TokenCipher("GOLEM_TEST_NO_KEY", tmp_path / "credentials.key")
    grant = first_grant(oauth, clock)
    await store.credentials.put("gitlab", grant, cipher)
    keeper = StoredGrant(store, cipher, "acme")
    one = source(grant, gitlab, clock, keeper=keeper)  # a run
    other = source(grant, gitlab, clock, keeper=keeper)  # a run on another server

    oauth.revoke_access()
    await forge_of(one, gitlab).fetch_issue(f"{PROJECT}#7")
    kept = await store.credentials.reveal("gitlab", cipher)
    issue = await forge_of(other, gitlab).fetch_issue(f"{PROJECT}#7")

    assert isinstance(kept, OAuthGrant)
    assert (kept.access_token, kept.refresh_token) == (
        oauth.access_tokens()[-1],
        oauth.refresh_tokens()[-1],
    )
    assert issue.title == "Fix the parser"
    assert oauth.refreshes == 1  # the other holder never tried the spent refresh token


async def test_a_restarted_host_reads_the_kept_grant_not_the_spent_refresh_token(
    oauth: OAuthAuthority,
    gitlab: GitLabServer,
    clock: Clock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    access, refresh = oauth.authorise()
    monkeypatch.setenv(ACCESS_ENV, access)
    monkeypatch.setenv(REFRESH_ENV, refresh)
    monkeypatch.setenv(SECRET_ENV, str(oauth.client_secret))
    config = GitLabConfig(
        base_url=gitlab.base_url, token_env=ACCESS_ENV, refresh_token_env=REFRESH_ENV,
        oauth_client_id=oauth.client_id, oauth_client_secret_env=SECRET_ENV,
    )  # fmt: skip
    state_dir = tmp_path / "state"

    def host_forge() -> GitLabForge:
        credentials = ForgeCredentials.from_config(ForgeConfig(gitlab=config), state_dir)
        return GitLabForge(config, credentials=credentials, backoff=0)

    oauth.revoke_access()
    await host_forge().fetch_issue(f"{PROJECT}#7")  # refreshed: the variables' token is spent
    oauth.revoke_access()
    issue = await host_forge().fetch_issue(f"{PROJECT}#7")  # a new process, same variables

    assert issue.title == "Fix the parser"
    assert oauth.refreshes == 2  # each from the newest refresh token: none was refused
    assert (state_dir / GRANT_FILE).stat().st_mode & 0o077 == 0
    assert refresh not in (state_dir / GRANT_FILE).read_text()


async def test_a_revoked_refresh_token_says_how_to_authorise_again(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock
) -> None:
    forge = forge_of(source(first_grant(oauth, clock), gitlab, clock), gitlab)

    oauth.revoke_all()  # the person revoked golem's access in GitLab's settings
    with pytest.raises(ForgeCredentialsRefused) as refused:
        await forge.fetch_issue(f"{PROJECT}#7")

    assert "refused the refresh token" in refused.value.message
    assert "PUT /v1/credentials/gitlab" in refused.value.message
    assert "refresh_token_env" in refused.value.message


async def test_a_wrong_client_secret_says_which_setting(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock
) -> None:
    grant = first_grant(oauth, clock).model_copy(update={"client_secret": "gloas-wrong"})
    forge = forge_of(source(grant, gitlab, clock), gitlab)

    oauth.revoke_access()
    with pytest.raises(ForgeCredentialsRefused, match="oauth_client_id"):
        await forge.fetch_issue(f"{PROJECT}#7")
    assert oauth.refreshes == 0


async def test_a_push_refused_for_a_revoked_token_is_retried_once_refreshed(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock, tmp_path: Path
) -> None:
    bare = seed_bare(tmp_path / "served" / "group", "demo.git")
    git("config", "http.receivepack", "true", cwd=bare)
    tokens = source(first_grant(oauth, clock), gitlab, clock)
    config = ForgeConfig(gitlab=GitLabConfig(base_url=gitlab.base_url))
    with GitHttpServer(tmp_path / "served", oauth.accepts, username="oauth2") as served:
        url = served.url_for(f"{PROJECT}.git")
        login = git_auth(config, url, ForgeCredentials(gitlab=tokens, host_git=False))
        repo = GitRepo(tmp_path / "work", auth=login, host_credentials=False)
        await repo.clone_from(url)
        await repo.checkout_branch("golem/fix")
        (repo.path / "fix.txt").write_text("fixed\n")
        sha = await repo.commit_all("fix", *AUTHOR)

        oauth.revoke_access()
        await repo.push("golem/fix")

    assert git("rev-parse", "golem/fix", cwd=bare) == sha
    assert oauth.refreshes == 1
    pushed = [r for r in served.requests if r.method == "POST" and "receive-pack" in r.path]
    assert {served.token_of(r) for r in pushed} == {oauth.access_tokens()[-1]}


async def test_a_tenants_grant_travels_to_another_process_and_keeps_its_refresh_there(
    oauth: OAuthAuthority, gitlab: GitLabServer, clock: Clock, tmp_path: Path
) -> None:
    store = await SqlStore.connect(f"sqlite:///{tmp_path / 'golem.db'}", tenant="acme")
    cipher = TokenCipher("GOLEM_TEST_NO_KEY", tmp_path / "credentials.key")
    try:
        grant = first_grant(oauth, clock)
        await store.credentials.put("gitlab", grant, cipher)
        tokens = source(grant, gitlab, clock, keeper=StoredGrant(store, cipher, "acme"))
        order = ForgeCredentials(gitlab=tokens, source="tenant acme", host_git=False)
        carried = pickle.loads(pickle.dumps(order))  # noqa: S301 - as a run to a cluster's node

        oauth.revoke_access()
        config = GitLabConfig(base_url=gitlab.base_url)
        issue = await GitLabForge(config, credentials=carried, backoff=0).fetch_issue(
            f"{PROJECT}#7"
        )
        kept = await store.credentials.reveal("gitlab", cipher)
    finally:
        await store.close()

    assert issue.title == "Fix the parser"
    assert isinstance(kept, OAuthGrant)
    assert kept.refresh_token == oauth.refresh_tokens()[-1]  # kept where the tenant's is
