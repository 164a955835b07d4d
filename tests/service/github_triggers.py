"""A real `golem serve` triggered by the loopback GitHub's webhooks: its configuration,
deliveries and the runs they start (fixtures)."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from httpx_sse import connect_sse

import golem.blueprint
from golem.store import PendingRecord, SqlStore
from golem.testing.github_server import GitHubServer, RecordedRequest, Reply
from tests.blueprint.repos import EXAMPLES, make_remote
from tests.service.served import Served, serving
from tests.service.webhooks import deliver_github

TOKEN = "ghp_triggertest0123456789abcdef"  # noqa: S105 - a test token

SECRET = "webhook-secret-0123456789"  # noqa: S105 - a test secret

GOLEM_LOGIN = "golem-bot"  # whom the loopback GitHub says the token is, and comments as

WAIT = 120.0  # seconds a condition on GitHub's side may take to come true

Comments = list[dict[str, Any]]


class GitHub(GitHubServer):
    """The loopback GitHub, also answering ``GET /user`` (the token's own account)."""

    def route(self, request: RecordedRequest) -> Reply:
        """``/user``, or what GitHubServer answers."""
        if request.method == "GET" and urlsplit(request.path).path == "/user":
            return Reply.json({"login": GOLEM_LOGIN, "id": 2, "type": "User"})
        return super().route(request)


def green(repo: str, sha: str) -> list[dict[str, Any]]:
    """Every commit's CI: one check run, passed."""
    return [{"name": "test", "conclusion": "success"}]


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


@pytest.fixture(scope="module")
def remotes() -> Iterator[Path]:
    """Where the bare repositories live, reachable by the boxes' user."""
    directory = Path(tempfile.mkdtemp(prefix="golem-test-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def gated_minion(directory: Path) -> Path:
    """The minion blueprint, starting at a gate (approved: on to prepare)."""
    source = Path(golem.blueprint.__file__).parent / "builtin" / "minion.yaml"
    blueprint = yaml.safe_load(source.read_text())
    blueprint.update(name="gated-minion", start="approve")
    gate = {"id": "approve", "kind": "gate", "message": "Go on?", "timeout": 3600}
    blueprint["nodes"].append({**gate, "next": {"approved": "prepare", "rejected": "end"}})
    path = directory / "gated-minion.yaml"
    path.write_text(yaml.safe_dump(blueprint))
    return path


def trigger_config(github: GitHub, remotes: Path, blueprint: Path) -> str:
    """golem.toml of a server whose GitHub is the loopback one."""
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    return f"""
[forge]
provider = "github"

[forge.github]
api_url = "{github.api_url}"
token_env = "TRIGGER_TEST_GITHUB_TOKEN"

[server.github]
secret_env = "TRIGGER_TEST_WEBHOOK_SECRET"
label = "golem"
handle = "@golem"
blueprint = "{blueprint}"
model = "{model}"
repo_url = "{remotes}/{{repo}}.git"
"""


SERVER_ENV = {"TRIGGER_TEST_GITHUB_TOKEN": TOKEN, "TRIGGER_TEST_WEBHOOK_SECRET": SECRET}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, remotes: Path
) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("trigger")
    config = trigger_config(github, remotes, gated_minion(home))
    with serving(home / "state", config=config, env=SERVER_ENV) as server:
        yield server


@pytest.fixture(scope="module")
def key(served: Served) -> str:
    """A key of the tenant the trigger's runs belong to."""
    return served.key("default")


def new_repo(github: GitHub, remotes: Path, name: str) -> str:
    """octo/NAME: a bare repository of examples/calculator, with issue #1 about it."""
    make_remote(remotes / "octo", name)
    repo = f"octo/{name}"
    github.add_issue(
        repo, 1, "add() subtracts its arguments", body="`add(2, 3)` gives -1. See calculator.py."
    )
    return repo


def labelled(repo: str, number: int = 1, label: str = "golem") -> dict[str, Any]:
    """An ``issues`` delivery: ``label`` was added to the issue."""
    return {
        "action": "labeled",
        "issue": {"number": number, "state": "open", "labels": [{"name": label}]},
        "label": {"name": label},
        "repository": {"full_name": repo},
        "sender": {"login": "octocat", "type": "User"},
    }


def commented(
    repo: str,
    body: str,
    *,
    number: int = 1,
    author: str = "octocat",
    kind: str = "User",
    association: str = "OWNER",
    action: str = "created",
    on_pull: bool = False,
) -> dict[str, Any]:
    """An ``issue_comment`` delivery: ``author`` commented ``body`` on the issue."""
    issue: dict[str, Any] = {"number": number, "state": "open"}
    if on_pull:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{repo}/pulls/{number}"}
    user = {"login": author, "type": kind}
    return {
        "action": action,
        "issue": issue,
        "comment": {"body": body, "user": user, "author_association": association},
        "repository": {"full_name": repo},
        "sender": user,
    }


def deliver(
    served: Served,
    event: str,
    payload: dict[str, Any],
    *,
    delivery: str | None = None,
    secret: str = SECRET,
    signature: str | None = None,
) -> httpx.Response:
    """POST a delivery as GitHub does, signed with this module's secret by default."""
    return deliver_github(
        served, event, payload, secret=secret, delivery=delivery, signature=signature
    )


def comments_when(
    github: GitHub, repo: str, condition: Callable[[Comments], bool], number: int = 1
) -> Comments:
    """The issue's comments, once ``condition`` holds for them (polled, at most WAIT)."""
    deadline = time.monotonic() + WAIT
    while True:
        found = github.comments(repo, number)
        if condition(found):
            return found
        assert time.monotonic() < deadline, f"still not so after {WAIT}s: {found}"
        time.sleep(0.05)  # a poll of the loopback GitHub's state, not a wait for a result


def acknowledged(run_id: str) -> Callable[[Comments], bool]:
    """Whether a comment acknowledges ``run_id``."""
    return lambda found: any(f"run `{run_id}`" in c["body"] for c in found)


def run_to_end(served: Served, key: str, run_id: str, decision: str = "approved") -> dict[str, Any]:
    """Follow the run's events; answer its gate with ``decision`` (or cancel it, for
    ``cancel``); the data of its run_end event."""
    with (
        served.client(key) as follower,
        served.client(key) as actor,
        connect_sse(follower, "GET", f"/v1/runs/{run_id}/events") as events,
    ):
        cancelled = False  # a resumed run waits at its gate again: one cancel is enough
        for event in events.iter_sse():
            if event.event == "gate_wait" and decision == "cancel" and not cancelled:
                assert actor.post(f"/v1/runs/{run_id}/cancel").status_code == 200
                cancelled = True
            elif event.event == "gate_wait" and decision != "cancel":
                answer = actor.post(f"/v1/runs/{run_id}/gate", json={"decision": decision})
                assert answer.status_code == 200, answer.text
            if event.event == "run_end":
                return dict(json.loads(event.data))
    raise AssertionError(f"the events of {run_id} ended without run_end")


def runs_of(served: Served, key: str, repo: str) -> list[dict[str, Any]]:
    """The tenant's runs for issue #1 of ``repo``."""
    with served.client(key) as client:
        listed = client.get("/v1/runs", params={"limit": 500})
    listed.raise_for_status()
    return [r for r in listed.json() if r["request"]["issue"] == f"{repo}#1"]


def pending_of(served: Served, thread: str, source: str = "github") -> list[PendingRecord]:
    """The requests ``served``'s store keeps pending in ``thread``."""

    async def read() -> list[PendingRecord]:
        store = await SqlStore.connect(f"sqlite:///{served.state_dir / 'golem.db'}")
        try:
            return await store.pending.in_thread(source, thread)
        finally:
            await store.close()

    return asyncio.run(read())
