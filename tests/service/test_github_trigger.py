"""The GitHub trigger of `golem serve`, against a real server on loopback and a loopback
GitHub: signed deliveries start runs for labelled or mentioning issues, and only those;
a run is acknowledged on its issue and its end reported there (once); a redelivery, or a
second request while the issue's run is in progress, starts nothing new, after a restart
too.

The trigger's blueprint is the minion behind a gate, so that each test decides when its
run goes on (approve) or ends (cancel), and nothing depends on how fast a run is.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
import uuid
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
from tests.service.polling import eventually
from tests.service.served import Served, serving
from tests.service.webhooks import deliver_github

pytestmark = pytest.mark.bwrap

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


def test_a_labelled_issue_runs_to_a_pull_request_whose_link_is_commented(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "labelled")
    answer = deliver(served, "issues", labelled(repo))
    assert answer.status_code == 202, answer.text
    started = answer.json()
    assert started["status"] == "started"
    run_id = started["run_id"]
    [ack] = comments_when(github, repo, acknowledged(run_id))
    assert "labelled golem by octocat" in ack["body"]
    end = run_to_end(served, key, run_id)
    assert end["status"] == "succeeded"
    [pr] = github.pulls(repo)
    assert end["pr"]["url"] == pr["html_url"]
    assert "Closes #1" in pr["body"]
    [run] = runs_of(served, key, repo)
    assert run["request"]["repo"] == f"{remotes}/{repo}.git"
    assert (run["request"]["forge"], run["blueprint"]) == ("github", "gated-minion")
    found = github.comments(repo, 1)
    assert [c["body"].split()[:2] for c in found] == [["golem", "started"], ["golem", "opened"]]
    assert found[1]["body"] == f"golem opened {pr['html_url']}"  # the runner's; not twice


def test_a_mention_in_a_new_comment_starts_a_run_whose_cancellation_is_reported(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "mentioned")
    body = "@golem could you fix this? `add` is clearly wrong."
    answer = deliver(served, "issue_comment", commented(repo, body, association="COLLABORATOR"))
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    comments_when(github, repo, acknowledged(run_id))
    end = run_to_end(served, key, run_id, "cancel")
    assert end["status"] == "cancelled"
    found = comments_when(github, repo, lambda found: len(found) == 2)
    assert found[1]["body"].startswith(f"golem run `{run_id}` was cancelled")
    assert found[1]["user"]["login"] == GOLEM_LOGIN
    assert github.pulls(repo) == []


def test_deliveries_that_ask_for_nothing_start_nothing_and_say_why(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "unasked")
    asks = [
        ("issues", {**labelled(repo), "action": "opened"}, "only labeled"),
        ("issues", labelled(repo, label="bug"), "not the trigger's"),
        ("issues", {**labelled(repo), "issue": {"number": 1, "state": "closed"}}, "closed"),
        ("issue_comment", commented(repo, "looks like a bug to me"), "does not mention"),
        ("issue_comment", commented(repo, "@golemite, see this"), "does not mention"),
        ("issue_comment", commented(repo, "> @golem fix it\n\nno."), "does not mention"),
        ("issue_comment", commented(repo, "`@golem` is a bot"), "does not mention"),
        ("issue_comment", commented(repo, "@golem fix", action="edited"), "only new comments"),
        ("issue_comment", commented(repo, "@golem fix", association="NONE"), "collaborators"),
        ("push", {"ref": "refs/heads/main", "repository": {"full_name": repo}}, "no default"),
        (
            "push",
            {
                "ref": "refs/heads/main",
                "repository": {"full_name": repo, "default_branch": "main"},
                "after": "a" * 40,
            },
            "no automation watches",
        ),
        ("issues", {"action": "labeled", "label": {"name": "golem"}}, "names no issue"),
    ]
    for event, payload, reason in asks:
        answer = deliver(served, event, payload)
        assert answer.status_code == 202, (event, payload, answer.text)
        assert answer.json()["status"] == "ignored"
        assert reason in answer.json()["reason"], (event, payload, answer.json())
    pong = deliver(served, "ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert (pong.status_code, pong.json()["status"]) == (200, "ok")
    assert runs_of(served, key, repo) == []
    assert github.comments(repo, 1) == []


def test_golems_own_comments_and_bots_start_nothing(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "looped")
    run_id = deliver(served, "issues", labelled(repo)).json()["run_id"]
    for comment in comments_when(github, repo, acknowledged(run_id)):
        echoed = commented(repo, comment["body"], author=comment["user"]["login"])
        answer = deliver(served, "issue_comment", echoed)  # what GitHub sends back to us
        assert (answer.status_code, answer.json()["status"]) == (202, "ignored")
    own = deliver(served, "issue_comment", commented(repo, "@golem again", author=GOLEM_LOGIN))
    assert "golem's own account" in own.json()["reason"]
    bot = commented(repo, "@golem bump", author="renovate[bot]", kind="Bot")
    assert "is a bot" in deliver(served, "issue_comment", bot).json()["reason"]
    assert run_to_end(served, key, run_id, "cancel")["status"] == "cancelled"
    assert [r["id"] for r in runs_of(served, key, repo)] == [run_id]


def test_a_bad_or_missing_signature_is_401_and_starts_nothing(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "forged")
    answers = [
        deliver(served, "issues", labelled(repo), secret="not-the-secret"),  # noqa: S106
        deliver(served, "issues", labelled(repo), signature=""),
        deliver(served, "issues", labelled(repo), signature="sha256=" + "0" * 64),
        deliver(served, "issues", labelled(repo), signature="sha1=abc"),
    ]
    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert "X-Hub-Signature-256" in answers[0].json()["detail"]
    assert runs_of(served, key, repo) == []


def test_a_redelivery_or_a_second_label_while_the_run_is_in_progress_starts_nothing(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "redelivered")
    delivery = str(uuid.uuid4())
    first = deliver(served, "issues", labelled(repo), delivery=delivery)
    run_id = first.json()["run_id"]
    again = deliver(served, "issues", labelled(repo), delivery=delivery)
    assert again.status_code == 200
    assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
    relabelled = deliver(served, "issues", labelled(repo))
    assert relabelled.status_code == 200
    assert (relabelled.json()["status"], relabelled.json()["run_id"]) == ("running", run_id)
    assert run_to_end(served, key, run_id, "cancel")["status"] == "cancelled"
    late = deliver(served, "issues", labelled(repo), delivery=delivery)
    assert (late.json()["status"], late.json()["run_id"]) == ("duplicate", run_id)
    assert [r["id"] for r in runs_of(served, key, repo)] == [run_id]
    comments_when(github, repo, lambda found: len(found) == 2)
    assert sum(acknowledged(run_id)([c]) for c in github.comments(repo, 1)) == 2  # ack, end


def pending_of(served: Served, thread: str, source: str = "github") -> list[PendingRecord]:
    """The requests ``served``'s store keeps pending in ``thread``."""

    async def read() -> list[PendingRecord]:
        store = await SqlStore.connect(f"sqlite:///{served.state_dir / 'golem.db'}")
        try:
            return await store.pending.in_thread(source, thread)
        finally:
            await store.close()

    return asyncio.run(read())


def test_mentions_while_the_issues_run_runs_are_queued_per_person_masked_and_start_after_it(
    served: Served, key: str, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "mentioned-meanwhile")
    first = deliver(served, "issues", labelled(repo)).json()["run_id"]
    comments_when(github, repo, acknowledged(first))
    asks = [
        deliver(served, "issue_comment", commented(repo, text))
        for text in ("@golem please", f"@golem no: use {TOKEN} instead")
    ]
    assert [(a.status_code, a.json()["status"], a.json()["run_id"]) for a in asks] == [
        (202, "queued", first), (202, "queued", first),
    ]  # fmt: skip
    relabelled = deliver(served, "issues", labelled(repo))  # a label is no request: not queued
    assert (relabelled.json()["status"], relabelled.json()["run_id"]) == ("running", first)
    [kept] = pending_of(served, f"{repo}#1")  # one per person: the later words
    assert (kept.person, kept.run_id) == ("octocat", first)
    assert kept.request.startswith("@golem no: use ")
    assert TOKEN not in kept.request
    assert run_to_end(served, key, first, "cancel")["status"] == "cancelled"
    second = eventually(
        lambda: next((r["id"] for r in runs_of(served, key, repo) if r["id"] != first), None),
        "the queued mention's run",
    )
    [ack] = [c for c in comments_when(github, repo, acknowledged(second)) if second in c["body"]]
    assert f"It answers the request octocat made while run `{first}` ran" in ack["body"]
    assert pending_of(served, f"{repo}#1") == []
    assert run_to_end(served, key, second, "cancel")["status"] == "cancelled"
    assert len(runs_of(served, key, repo)) == 2


def test_after_a_restart_redeliveries_start_nothing_and_the_end_is_still_reported(
    tmp_path: Path, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "restarted")
    config = trigger_config(github, remotes, gated_minion(tmp_path))
    delivery = str(uuid.uuid4())
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as first:
        run_id = deliver(first, "issues", labelled(repo), delivery=delivery).json()["run_id"]
        comments_when(github, repo, acknowledged(run_id))
    with serving(tmp_path / "state", config=config, env=SERVER_ENV) as second:
        key = second.key("default")
        again = deliver(second, "issues", labelled(repo), delivery=delivery)
        assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
        other = deliver(second, "issues", labelled(repo))
        assert (other.json()["status"], other.json()["run_id"]) == ("running", run_id)
        assert run_to_end(second, key, run_id, "cancel")["status"] == "cancelled"
        found = comments_when(github, repo, lambda found: len(found) == 2)
    assert found[1]["body"].startswith(f"golem run `{run_id}` was cancelled")


def test_without_a_secret_every_delivery_is_refused(
    tmp_path: Path, github: GitHub, remotes: Path
) -> None:
    repo = new_repo(github, remotes, "unguarded")
    config = trigger_config(github, remotes, gated_minion(tmp_path))
    env = {"TRIGGER_TEST_GITHUB_TOKEN": TOKEN}
    with serving(tmp_path / "state", config=config, env=env) as server:
        answers = [
            deliver(server, "ping", {"zen": "hi"}),
            deliver(server, "issues", labelled(repo)),
            deliver(server, "issues", labelled(repo), secret=""),
        ]
        with server.admin() as admin:
            runs = admin.get("/v1/runs").json()
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert "$TRIGGER_TEST_WEBHOOK_SECRET" in answer.json()["detail"]
    assert runs == []
    assert github.comments(repo, 1) == []


def test_the_trigger_uses_its_tenants_own_token_and_the_servers_only_where_shared(
    tmp_path: Path, remotes: Path
) -> None:
    own_token = "ghp_triggerTenantOwn0123456789abcdef"  # noqa: S105 - a test token
    unshared = "\n[server]\nshared_forge_tenants = []\n"
    with GitHub(token=own_token) as github:
        repo = new_repo(github, remotes, "own-token")
        config = trigger_config(github, remotes, gated_minion(tmp_path)) + unshared
        with serving(tmp_path / "state", config=config, env=SERVER_ENV) as server:
            refused = deliver(server, "issues", labelled(repo))
            key = server.key("default")
            with server.client(key) as client:
                put = client.put("/v1/credentials/github", json={"token": own_token})
            assert put.status_code == 200, put.text
            started = deliver(server, "issues", labelled(repo))
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            comments_when(github, repo, acknowledged(run_id))
            assert run_to_end(server, key, run_id, "cancel")["status"] == "cancelled"
            comments_when(github, repo, lambda found: len(found) == 2)
        assert refused.status_code == 503, refused.text
        assert "tenant 'default' has none" in refused.json()["detail"]
        assert "PUT /v1/credentials/github" in refused.json()["detail"]
        assert {r.headers.get("authorization") for r in github.requests} == {
            f"Bearer {own_token}"
        }  # the server's token was never sent: the tenant is not among the shared
