"""Forge credentials per tenant, attacked through a real `golem serve`: a tenant's key tries
to reach another tenant's repository, read, replace or delete another tenant's token, and
the token is looked for wherever it could leak (the database, the log, the answers).

The loopback GitHub gives each token its own reach (an account's repositories), the git
servers want one tenant's token each, and both record what every request carried. Runs are
submitted with ``trusted`` keys: the ``user`` role's repository policy refuses loopback
remotes before a run exists (a defence of its own); the token rule holds for every role.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from golem.store import new_key
from golem.testing.git_http_server import GitHttpServer
from golem.testing.github_server import GitHubServer, RecordedRequest
from tests.attacks.tenant_forges import (  # noqa: F401 - its fixtures
    KEY_ENV,
    SERVER_TOKEN,
    TOKEN_A,
    TOKEN_B,
    TenantGitHub,
    github,
    repos,
    revealed,
)
from tests.blueprint.repos import EXAMPLES
from tests.service.served import Served, serving

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


def bearer_tokens(requests: list[RecordedRequest]) -> set[str | None]:
    return {r.headers.get("authorization") for r in requests}


def basic(token: str) -> str:
    """What git sends for ``token`` (GitAuth's header)."""
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


@pytest.fixture(scope="module")
def git_a(repos: Path) -> Iterator[GitHttpServer]:  # noqa: F811 - fixtures, imported above
    with GitHttpServer(repos / "octo-a", TOKEN_A) as server:
        yield server


@pytest.fixture(scope="module")
def git_b(repos: Path) -> Iterator[GitHttpServer]:  # noqa: F811 - fixtures, imported above
    with GitHttpServer(repos / "octo-b", TOKEN_B) as server:
        yield server


def server_config(github: GitHubServer, extra: str = "") -> str:  # noqa: F811 - fixtures, imported above
    """golem.toml of a server whose GitHub is the loopback one, git given the tokens."""
    return f"""
[forge]
provider = "github"

[forge.github]
api_url = "{github.api_url}"
token_env = "ATTACK_SERVER_GITHUB_TOKEN"
token_for_git = true

[server]
credentials_key_env = "{KEY_ENV}"
{extra}
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, github: TenantGitHub) -> Iterator[Served]:  # noqa: F811 - fixtures, imported above
    state = tmp_path_factory.mktemp("tenant-forge") / "state"
    env = {"ATTACK_SERVER_GITHUB_TOKEN": SERVER_TOKEN}
    with serving(state, config=server_config(github), env=env) as server:
        yield server


def client_of(served: Served, tenant: str, role: str = "user") -> httpx.Client:
    return served.client(served.key(tenant, role))


def set_token(client: httpx.Client, token: str, **params: str) -> httpx.Response:
    return client.put("/v1/credentials/github", json={"token": token}, params=params)


def run_end(client: httpx.Client, repo: str, issue: str | None = None) -> dict[str, object]:
    """Submit a GitHub run for ``issue`` (None: a task); the run as it ended (after its
    run_end event)."""
    asked = {"issue": issue} if issue is not None else {"task": "Fix add()"}
    body = {"repo": repo, **asked, "forge": "github", "model": FIX}
    submitted = client.post("/v1/runs", json=body)
    assert submitted.status_code == 202, submitted.text
    run_id = submitted.json()["id"]
    with client.stream("GET", f"/v1/runs/{run_id}/events") as events:
        kinds = [line for line in events.iter_lines() if line.startswith("event:")]
    assert kinds[-1] == "event: run_end"
    run: dict[str, object] = client.get(f"/v1/runs/{run_id}").json()
    return run


def test_a_tenant_without_a_token_gets_no_other_token_and_its_run_fails_saying_how_to_set_one(
    served: Served,
    github: TenantGitHub,  # noqa: F811 - fixtures, imported above
    git_b: GitHttpServer,
) -> None:
    with client_of(served, "victim") as victim:
        assert set_token(victim, TOKEN_B).status_code == 200
    seen_github, seen_git = len(github.requests), len(git_b.requests)
    with client_of(served, "intruder", "trusted") as intruder:
        run = run_end(intruder, git_b.url_for("calculator.git"), "octo-b/calculator#1")
    assert run["status"] == "failed"
    error = str(run["error"])
    assert "tenant 'intruder' has none" in error
    assert "PUT /v1/credentials/github" in error
    assert "golem credentials set --tenant intruder --forge github" in error
    assert github.requests[seen_github:] == []  # not even an anonymous try
    assert git_b.requests[seen_git:] == []


def test_a_tenants_own_token_is_the_only_one_its_run_carries_to_another_tenants_repository(
    served: Served,
    github: TenantGitHub,  # noqa: F811 - fixtures, imported above
    git_b: GitHttpServer,
) -> None:
    with client_of(served, "victim") as victim:
        assert set_token(victim, TOKEN_B).status_code == 200
    seen_github, seen_git = len(github.requests), len(git_b.requests)
    with client_of(served, "intruder-with-token", "trusted") as intruder:
        assert set_token(intruder, TOKEN_A).status_code == 200
        for_issue = run_end(intruder, git_b.url_for("calculator.git"), "octo-b/calculator#1")
        for_task = run_end(intruder, git_b.url_for("calculator.git"))
    assert (for_issue["status"], for_task["status"]) == ("failed", "failed")
    assert "GitHub has no issue octo-b/calculator#1" in str(for_issue["error"])
    assert "git clone" in str(for_task["error"])
    assert TOKEN_A not in json.dumps([for_issue, for_task])
    carried = {r.authorization for r in git_b.requests[seen_git:]}
    assert carried
    assert carried <= {basic(TOKEN_A)}
    assert all(r.status == 401 for r in git_b.requests[seen_git:])
    assert bearer_tokens(github.requests[seen_github:]) <= {f"Bearer {TOKEN_A}"}


@pytest.mark.bwrap
def test_a_tenants_run_carries_exactly_its_own_token_all_the_way_to_its_pull_request(
    served: Served,
    github: TenantGitHub,  # noqa: F811 - fixtures, imported above
    git_a: GitHttpServer,
) -> None:
    seen_github, seen_git = len(github.requests), len(git_a.requests)
    with client_of(served, "owner-a", "trusted") as owner:
        assert set_token(owner, TOKEN_A).status_code == 200
        run = run_end(owner, git_a.url_for("calculator.git"), "octo-a/calculator#1")
    assert run["status"] == "succeeded", run["error"]
    [pr] = github.pulls("octo-a/calculator")
    assert pr["html_url"] == run["pr"]["url"]  # type: ignore[index]
    git_requests = git_a.requests[seen_git:]
    assert any(r.method == "POST" and r.path.endswith("git-receive-pack") for r in git_requests)
    assert {r.authorization for r in git_requests} == {basic(TOKEN_A)}
    assert bearer_tokens(github.requests[seen_github:]) == {f"Bearer {TOKEN_A}"}
    assert TOKEN_A not in json.dumps(run)


def test_a_token_is_write_only_sealed_on_disk_and_never_in_the_log(served: Served) -> None:
    token = "ghp_writeOnly" + new_key()[:30].replace("-", "x").replace("_", "y")
    with client_of(served, "sealed") as tenant:
        put = set_token(tenant, token)
        listed = tenant.get("/v1/credentials")
    assert put.status_code == 200, put.text
    assert (put.json()["tenant"], put.json()["forge"]) == ("sealed", "github")
    assert token not in put.text
    assert [(c["tenant"], c["forge"]) for c in listed.json()] == [("sealed", "github")]
    assert token not in listed.text
    files = [p for p in served.state_dir.rglob("*") if p.is_file()]
    assert any(p.name == "golem.db" for p in files)
    assert [p for p in files if token.encode() in p.read_bytes()] == []
    assert token not in "".join(served.output)
    assert revealed(served.state_dir, "sealed") == token  # sealed, and kept


def test_another_tenant_cannot_read_replace_or_delete_a_token(served: Served) -> None:
    with client_of(served, "holder") as holder:
        assert set_token(holder, TOKEN_A).status_code == 200
        before = holder.get("/v1/credentials").json()
    with client_of(served, "neighbour", "trusted") as neighbour:
        tries = [
            neighbour.get("/v1/credentials", params={"tenant": "holder"}),
            set_token(neighbour, TOKEN_B, tenant="holder"),
            neighbour.delete("/v1/credentials/github", params={"tenant": "holder"}),
        ]
        own_delete = neighbour.delete("/v1/credentials/github")
        own_list = neighbour.get("/v1/credentials")
    for answer in tries:
        assert answer.status_code == 403, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert "its own tenant" in answer.json()["detail"]
    assert own_delete.status_code == 404
    assert "'neighbour' has no github token" in own_delete.json()["detail"]
    assert own_list.json() == []
    with client_of(served, "holder") as holder:
        assert holder.get("/v1/credentials").json() == before
    with served.admin() as admin:
        assert admin.get("/v1/credentials", params={"tenant": "holder"}).json() == before
    assert revealed(served.state_dir, "holder") == TOKEN_A


def test_on_postgresql_the_row_holds_no_token(
    tmp_path: Path,
    github: TenantGitHub,  # noqa: F811 - fixtures, imported above
    postgres_url: str,
) -> None:
    env = {"GOLEM_DATABASE_URL": postgres_url}
    with (
        serving(tmp_path / "state", config=server_config(github), env=env) as server,
        client_of(server, "pg-tenant") as tenant,
    ):
        assert set_token(tenant, TOKEN_A).status_code == 200
    engine = create_engine(postgres_url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT f::text FROM forge_credentials f")).scalars().all()
    finally:
        engine.dispose()
    assert len(rows) == 1
    assert "pg-tenant" in rows[0]
    assert TOKEN_A not in rows[0]


def test_a_wrong_or_missing_key_is_a_clear_error_and_loses_nothing(
    tmp_path: Path,
    github: TenantGitHub,  # noqa: F811 - fixtures, imported above
) -> None:
    state, config = tmp_path / "state", server_config(github)
    right = new_key()
    with serving(state, config=config, env={KEY_ENV: right}) as first:
        with client_of(first, "keyed") as keyed:
            assert set_token(keyed, TOKEN_A).status_code == 200
        trusted_key = first.key("keyed", "trusted")
    url = f"sqlite:///{state / 'golem.db'}"
    sealed = _sealed_rows(url)
    for env, says in [({KEY_ENV: new_key()}, "stored with another key"), ({}, "no key")]:
        with (
            serving(state, config=config, env=env) as server,
            server.client(trusted_key) as keyed,
        ):
            run = run_end(keyed, "https://github.com/octo-a/calculator.git", "octo-a/c#1")
            refused = set_token(keyed, TOKEN_B)
        assert run["status"] == "failed"
        assert says in str(run["error"])
        assert f"${KEY_ENV}" in str(run["error"])
        assert refused.status_code == 503, refused.text
        assert says in refused.json()["detail"]
        assert _sealed_rows(url) == sealed  # nothing lost, nothing replaced
        assert not (state / "credentials.key").exists()  # no new key over the old tokens
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, right)
        assert revealed(state, "keyed") == TOKEN_A


def _sealed_rows(url: str) -> list[tuple[str, str, str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as db:
            rows = db.execute(text("SELECT tenant, forge, token FROM forge_credentials"))
            return [(r.tenant, r.forge, r.token) for r in rows]
    finally:
        engine.dispose()
