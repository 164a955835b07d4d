"""A repository's prepared snapshot refreshed on the forge's push webhook, through a real
`golem serve`: a GitHub ``push`` (signed with X-Hub-Signature-256 as GitHub signs it) or a
GitLab Push Hook (with its secret token) to the default branch fires the automation that
runs the ``prepare`` blueprint, once per delivery; the prepared snapshot moves to the new
head and replaces the old one (never two kept); a push to another branch, or one that
deletes the branch, fires nothing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.blueprint.prepared import PreparedRecord, PreparedRepos
from golem.core import load_config
from golem.sandbox import SnapshotStore
from tests.blueprint.repos import git, make_remote
from tests.service.automation_kit import GITHUB_SECRET, GITLAB_SECRET, automation, when
from tests.service.served import Served, serving
from tests.service.webhooks import deliver_github

pytestmark = pytest.mark.bwrap

ENV = {"PREPARED_TEST_GITHUB_SECRET": GITHUB_SECRET, "PREPARED_TEST_GITLAB_SECRET": GITLAB_SECRET}
TENANT = "prepared-pushes"


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("prepared-remotes")
    home.chmod(0o755)
    return make_remote(home)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, remote: Path) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("prepared-refresh")
    github = automation(
        "refresh-github",
        TENANT,
        remote,
        Path("prepare"),
        event="github.push",
        watch="octo/app",
        task="Refresh the prepared snapshot at {sha}",
    )
    gitlab = automation(
        "refresh-gitlab",
        TENANT,
        remote,
        Path("prepare"),
        event="gitlab.push",
        watch="group/app",
        task="Refresh the prepared snapshot at {sha}",
    )
    config = f"""
[server.github]
secret_env = "PREPARED_TEST_GITHUB_SECRET"

[server.gitlab]
secret_env = "PREPARED_TEST_GITLAB_SECRET"

{github}
{gitlab}
"""
    with serving(home / "state", config=config, env=ENV) as server:
        yield server


def push(repo: str, head: str, *, branch: str = "main") -> dict[str, Any]:
    """A ``push`` delivery as GitHub sends it (the fields golem reads, and some it does
    not)."""
    return {
        "ref": f"refs/heads/{branch}", "before": "0" * 39 + "1", "after": head,
        "created": False, "deleted": False, "forced": False,
        "compare": f"https://github.com/{repo}/compare/000001...{head[:12]}",
        "commits": [{"id": head, "message": "change", "distinct": True}],
        "head_commit": {"id": head, "message": "change"},
        "repository": {"full_name": repo, "default_branch": "main", "master_branch": "main"},
        "pusher": {"name": "octocat", "email": "octocat@example.invalid"},
        "sender": {"login": "octocat", "type": "User"},
    }  # fmt: skip


def to_github(served: Served, body: dict[str, Any], delivery: str) -> httpx.Response:
    return deliver_github(served, "push", body, secret=GITHUB_SECRET, delivery=delivery)


def gitlab_push(project: str, head: str, *, branch: str = "main") -> dict[str, Any]:
    """A ``Push Hook`` delivery as GitLab sends it (the fields golem reads, and some)."""
    return {
        "object_kind": "push", "event_name": "push", "before": "0" * 39 + "1", "after": head,
        "ref": f"refs/heads/{branch}", "checkout_sha": head, "user_username": "jsmith",
        "project_id": 15,
        "project": {"id": 15, "path_with_namespace": project, "default_branch": "main",
                    "web_url": f"https://gitlab.example.com/{project}"},
        "commits": [{"id": head, "message": "change"}], "total_commits_count": 1,
    }  # fmt: skip


def to_gitlab(served: Served, body: dict[str, Any], delivery: str) -> httpx.Response:
    headers = {
        "Content-Type": "application/json", "X-Gitlab-Event": "Push Hook",
        "X-Gitlab-Token": GITLAB_SECRET, "X-Gitlab-Event-UUID": delivery,
    }  # fmt: skip
    with served.client() as client:
        return client.post("/v1/gitlab/webhook", content=json.dumps(body), headers=headers)


def finished(served: Served, run_id: str) -> dict[str, Any]:
    with served.client(served.key(TENANT, "trusted")) as client:
        state: dict[str, Any] = when(
            lambda: client.get(f"/v1/runs/{run_id}").json(),
            lambda run: run["status"] not in ("queued", "running"),
        )
    return state


def record(served: Served) -> PreparedRecord:
    config = load_config({"state_dir": str(served.state_dir)}, files=[])
    [kept] = PreparedRepos(config).of_tenant(TENANT)
    return kept


def prepared_snapshots(served: Served) -> list[str]:
    return [s.name for s in SnapshotStore(served.state_dir).all() if s.name.startswith("prepared-")]


def new_commit(remote: Path) -> str:
    work = remote.parent / "calculator-push"
    if not work.exists():
        git("clone", "-q", str(remote), str(work), cwd=remote.parent)
    git("pull", "-q", cwd=work)
    (work / "NEWS.md").write_text(f"{uuid.uuid4()}\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "news", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()


def test_a_push_to_the_default_branch_moves_the_prepared_snapshot_to_the_new_head(
    served: Served, remote: Path
) -> None:
    head = git("rev-parse", "main", cwd=remote).strip()
    delivery = str(uuid.uuid4())
    fired = to_github(served, push("octo/app", head), delivery)
    assert fired.status_code == 202, fired.text
    assert fired.json()["status"] == "started"
    assert finished(served, fired.json()["run_id"])["status"] == "succeeded"
    assert record(served).commit == head
    assert len(prepared_snapshots(served)) == 1
    again = to_github(served, push("octo/app", head), delivery)
    assert again.json()["status"] == "duplicate"

    moved = new_commit(remote)
    elsewhere = to_github(served, push("octo/app", moved, branch="feature"), str(uuid.uuid4()))
    assert elsewhere.json()["status"] == "ignored"
    assert "not the default branch" in elsewhere.json()["reason"]
    deleted = {**push("octo/app", "0" * 40), "deleted": True}
    removed = to_github(served, deleted, str(uuid.uuid4()))
    assert removed.json()["status"] == "ignored"
    assert "deleted" in removed.json()["reason"]
    gone = {**gitlab_push("group/app", "0" * 40), "checkout_sha": None}
    assert to_gitlab(served, gone, str(uuid.uuid4())).json()["status"] == "ignored"
    assert record(served).commit == head
    fired = to_gitlab(served, gitlab_push("group/app", moved), str(uuid.uuid4()))
    assert fired.json()["status"] == "started", fired.text
    assert finished(served, fired.json()["run_id"])["status"] == "succeeded"
    assert record(served).commit == moved
    assert len(prepared_snapshots(served)) == 1  # the old one replaced, never two kept
