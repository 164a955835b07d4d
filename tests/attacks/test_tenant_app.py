"""A tenant's GitHub App, through a real `golem serve`: its key goes in through the
credentials API, sealed, and never comes out (not in the database's rows, the server's log
or any answer); what is not an App's key is refused at the door saying what to give; and
the tenant's run mints the App's installation tokens per use, so a token that expires
between the clone and the push (the loopback git server expires every token at the first
push) is replaced and the run ships."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from golem.testing.git_http_server import GitHttpServer
from golem.testing.github_app_server import AppAuthority
from golem.testing.github_server import GitHubServer
from tests.attacks.tenant_forges import KEY_ENV, revealed
from tests.blueprint.repos import EXAMPLES, git, make_remote
from tests.service.served import Served, serving

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
REPO = "octo-app/calculator"


@pytest.fixture(scope="module")
def app() -> AppAuthority:
    return AppAuthority(77, installations={REPO: 9}, lifetime=3600)


@pytest.fixture(scope="module")
def github(app: AppAuthority) -> Iterator[GitHubServer]:
    with GitHubServer(app=app) as server:
        server.add_issue(REPO, 1, "add() subtracts", body="See calculator.py.")
        server.ci = lambda repo, sha: [{"name": "test", "conclusion": "success"}]
        yield server


@pytest.fixture(scope="module")
def git_server(app: AppAuthority) -> Iterator[GitHttpServer]:
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    (directory / "octo-app").mkdir()
    remote = make_remote(directory / "octo-app")
    git("config", "http.receivepack", "true", cwd=remote)
    with GitHttpServer(directory, app.accepts) as server:
        yield server
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, github: GitHubServer) -> Iterator[Served]:
    config = f"""
[forge]
provider = "github"

[forge.github]
api_url = "{github.api_url}"

[server]
credentials_key_env = "{KEY_ENV}"
"""
    with serving(tmp_path_factory.mktemp("tenant-app") / "state", config=config) as server:
        yield server


def set_app(client: httpx.Client, **body: object) -> httpx.Response:
    return client.put("/v1/credentials/github", json=body)


def test_what_is_not_an_apps_key_is_refused_at_the_door_saying_what_to_give(
    served: Served, app: AppAuthority
) -> None:
    with served.client(served.key("door")) as tenant:
        garbage = set_app(tenant, app_id=77, private_key="ghp_not-a-key")
        mixed = set_app(tenant, app_id=77, token="ghp_a-token-too")  # noqa: S106
        listed = tenant.get("/v1/credentials").json()

    assert garbage.status_code == 422, garbage.text
    assert ".pem file" in garbage.json()["detail"]
    assert mixed.status_code == 422, mixed.text
    assert "app_id and private_key" in mixed.json()["detail"]
    assert "app_id, token" in mixed.json()["detail"]
    assert listed == []


@pytest.mark.bwrap
def test_a_tenants_app_mints_fresh_tokens_when_one_expires_and_its_key_never_leaves(
    served: Served, app: AppAuthority, github: GitHubServer, git_server: GitHttpServer
) -> None:
    expired: list[bool] = []

    def at_the_first_push(method: str, path: str) -> None:
        if "receive-pack" in path and not expired:
            expired.append(True)
            app.expire_all()  # the hour ran out while the agent worked

    git_server.before = at_the_first_push
    with served.client(served.key("app-owner", "trusted")) as owner:
        put = set_app(owner, app_id=app.app_id, private_key=app.private_key)
        body = {
            "repo": git_server.url_for(f"{REPO}.git"), "issue": f"{REPO}#1",
            "forge": "github", "model": FIX,
        }  # fmt: skip
        submitted = owner.post("/v1/runs", json=body)
        assert submitted.status_code == 202, submitted.text
        run_id = submitted.json()["id"]
        with owner.stream("GET", f"/v1/runs/{run_id}/events") as events:
            answers = "".join(events.iter_lines())
        run = owner.get(f"/v1/runs/{run_id}").json()

    assert put.status_code == 200, put.text
    assert run["status"] == "succeeded", run["error"]
    assert expired
    [pr] = github.pulls(REPO)
    assert pr["html_url"] == run["pr"]["url"]
    first, *fresh = app.tokens()
    pushed = [r for r in git_server.requests if r.method == "POST" and "receive-pack" in r.path]
    assert pushed
    assert {git_server.token_of(r) for r in pushed} <= set(fresh)
    kept = revealed(served.state_dir, "app-owner")
    assert getattr(kept, "private_key", None) == app.private_key  # sealed, and kept
    secrets = [app.private_key.splitlines()[1], first, *fresh]
    files = [p for p in served.state_dir.rglob("*") if p.is_file()]
    for secret in secrets:
        assert secret not in answers + json.dumps(run) + put.text
        assert secret not in "".join(served.output)
        assert [p for p in files if secret.encode() in p.read_bytes()] == []
