"""GitLab credentials per tenant, attacked through a real `golem serve`: a tenant with no
GitLab token of its own (only a GitHub one) or with its own GitLab token tries another
tenant's GitLab project; and a tenant's GitLab run carries exactly its own token.

The loopback GitLab gives each token its own reach (a group's projects), as project and
group access tokens do; the git servers want one tenant's ``oauth2`` token each; both
record what every request carried. Runs are submitted with ``trusted`` keys (the ``user``
role's repository policy refuses loopback remotes before a run exists).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from golem.testing.git_http_server import GitHttpServer
from golem.testing.gitlab_server import GitLabServer, RecordedRequest, Reply, gitlab_error
from tests.blueprint.repos import EXAMPLES, git, make_remote
from tests.service.served import Served, serving

TOKEN_A = "glpat-attackTenantA0123456789abcd"  # noqa: S105 - test tokens
TOKEN_B = "glpat-attackTenantB0123456789abcd"  # noqa: S105
GITHUB_TOKEN = "ghp_attackOnlyGitHub0123456789abcdef"  # noqa: S105
FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


class TenantGitLab(GitLabServer):
    """The loopback GitLab where each token reaches its own group's projects only; another
    group's answer 404, as on GitLab."""

    def __init__(self, reach: dict[str, str]) -> None:
        super().__init__()
        self.reach = reach

    def check(self, request: RecordedRequest) -> Reply | None:
        """401 for an unknown token, 404 for a project beyond the token's reach."""
        group = self.reach.get(request.headers.get("private-token", ""))
        if group is None:
            return gitlab_error(401, "401 Unauthorized")
        parts = urlsplit(request.path).path.split("/")
        if parts[3:4] == ["projects"] and not unquote(parts[4]).startswith(f"{group}/"):
            return gitlab_error(404, "404 Project Not Found")
        return None


@pytest.fixture(scope="module")
def gitlab() -> Iterator[TenantGitLab]:
    with TenantGitLab({TOKEN_A: "group-a", TOKEN_B: "group-b"}) as server:
        for group in ("group-a", "group-b"):
            server.add_issue(f"{group}/calculator", 1, "add() subtracts", "See calculator.py.")
        server.ci = lambda project, sha: [{"name": "test", "status": "success"}]  # CI is green
        yield server


@pytest.fixture(scope="module")
def repos() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    for group in ("group-a", "group-b"):
        (directory / group / group).mkdir(parents=True)
        remote = make_remote(directory / group / group)
        git("config", "http.receivepack", "true", cwd=remote)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def git_a(repos: Path) -> Iterator[GitHttpServer]:
    with GitHttpServer(repos / "group-a", TOKEN_A, username="oauth2") as server:
        yield server


@pytest.fixture(scope="module")
def git_b(repos: Path) -> Iterator[GitHttpServer]:
    with GitHttpServer(repos / "group-b", TOKEN_B, username="oauth2") as server:
        yield server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, gitlab: TenantGitLab) -> Iterator[Served]:
    state = tmp_path_factory.mktemp("tenant-gitlab") / "state"
    config = f"""
[forge]
provider = "gitlab"

[forge.gitlab]
base_url = "{gitlab.base_url}"
token_env = "ATTACK_SERVER_GITLAB_TOKEN"
token_for_git = true

[server]
credentials_key_env = "ATTACK_GITLAB_CREDENTIALS_KEY"
shared_forge_tenants = []
"""
    with serving(state, config=config, env={"ATTACK_SERVER_GITLAB_TOKEN": TOKEN_B}) as server:
        yield server


def set_token(client: httpx.Client, forge: str, token: str) -> None:
    answer = client.put(f"/v1/credentials/{forge}", json={"token": token})
    assert answer.status_code == 200, answer.text


def run_end(client: httpx.Client, repo: str, issue: str) -> dict[str, object]:
    """Submit a GitLab run for ``issue``; the run as it ended."""
    body = {"repo": repo, "issue": issue, "forge": "gitlab", "model": FIX}
    submitted = client.post("/v1/runs", json=body)
    assert submitted.status_code == 202, submitted.text
    run_id = submitted.json()["id"]
    with client.stream("GET", f"/v1/runs/{run_id}/events") as events:
        kinds = [line for line in events.iter_lines() if line.startswith("event:")]
    assert kinds[-1] == "event: run_end"
    run: dict[str, object] = client.get(f"/v1/runs/{run_id}").json()
    return run


def test_a_github_token_is_no_gitlab_token_and_the_server_shares_none(
    served: Served, gitlab: TenantGitLab, git_b: GitHttpServer
) -> None:
    seen_api, seen_git = len(gitlab.requests), len(git_b.requests)
    with served.client(served.key("github-only", "trusted")) as tenant:
        set_token(tenant, "github", GITHUB_TOKEN)
        run = run_end(tenant, git_b.url_for("group-b/calculator.git"), "group-b/calculator#1")
    assert run["status"] == "failed"
    error = str(run["error"])
    assert "needs a GitLab token, and tenant 'github-only' has none" in error
    assert "PUT /v1/credentials/gitlab" in error
    assert gitlab.requests[seen_api:] == []  # not even an anonymous try
    assert git_b.requests[seen_git:] == []


def test_a_tenants_gitlab_token_is_the_only_one_it_carries_to_another_tenants_project(
    served: Served, gitlab: TenantGitLab, git_b: GitHttpServer
) -> None:
    seen_api, seen_git = len(gitlab.requests), len(git_b.requests)
    with served.client(served.key("intruder", "trusted")) as intruder:
        set_token(intruder, "gitlab", TOKEN_A)
        run = run_end(intruder, git_b.url_for("group-b/calculator.git"), "group-b/calculator#1")
    assert run["status"] == "failed"
    assert "GitLab has no issue group-b/calculator#1" in str(run["error"])
    assert TOKEN_A not in json.dumps(run)
    tokens = {r.headers.get("private-token") for r in gitlab.requests[seen_api:]}
    assert tokens == {TOKEN_A}
    assert git_b.requests[seen_git:] == []  # the issue was refused before any clone


@pytest.mark.bwrap
def test_a_tenants_gitlab_run_carries_exactly_its_own_token_to_its_merge_request(
    served: Served, gitlab: TenantGitLab, git_a: GitHttpServer
) -> None:
    seen_api, seen_git = len(gitlab.requests), len(git_a.requests)
    with served.client(served.key("owner-a", "trusted")) as owner:
        set_token(owner, "gitlab", TOKEN_A)
        run = run_end(owner, git_a.url_for("group-a/calculator.git"), "group-a/calculator#1")
    assert run["status"] == "succeeded", run["error"]
    [mr] = gitlab.merge_requests("group-a/calculator")
    assert mr["web_url"] == run["pr"]["url"]  # type: ignore[index]
    git_requests = git_a.requests[seen_git:]
    assert any(r.method == "POST" and r.path.endswith("git-receive-pack") for r in git_requests)
    assert {r.authorization for r in git_requests} == {git_a.expected_authorization()}
    assert {r.headers.get("private-token") for r in gitlab.requests[seen_api:]} == {TOKEN_A}
    assert TOKEN_A not in json.dumps(run)
