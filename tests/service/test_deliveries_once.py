"""Webhook deliveries handled exactly once, by two real `golem serve` sharing one PostgreSQL
database, with loopback GitHub and GitLab whose comments fail (so no mark on the issue can
tell a server what another one started): the same delivery racing to both servers, sent
again to either (GitHub's Redeliver, GitLab's retries with their Idempotency-Key, the same
event through a project's and a group's hook), or to a server started later on the same
database, starts one run, and every other answer is 200 ``duplicate`` naming it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.testing.gitlab_server import GitLabServer
from golem.testing.wire import RecordedRequest, Reply
from tests.conftest import new_postgres_database
from tests.service.github_triggers import GitHub, gated_minion, labelled, run_to_end
from tests.service.github_triggers import deliver as to_github
from tests.service.gitlab_triggers import labelled as gitlab_labelled
from tests.service.served import Served, launch, serving

pytestmark = [pytest.mark.bwrap, pytest.mark.postgres]

GITHUB_TOKEN = "ghp_oncetest0123456789abcdef"  # noqa: S105 - a test token
GITLAB_TOKEN = "glpat-oncetest0123456789"  # noqa: S105 - a test token
GITLAB_SECRET = "gitlab-webhook-token-0123456789"  # noqa: S105 - test_gitlab_trigger's
ENV = {
    "TRIGGER_TEST_GITHUB_TOKEN": GITHUB_TOKEN, "TRIGGER_TEST_GITLAB_TOKEN": GITLAB_TOKEN,
    "TRIGGER_TEST_WEBHOOK_SECRET": "webhook-secret-0123456789",  # test_github_trigger's
    "TRIGGER_TEST_GITLAB_SECRET": GITLAB_SECRET,
}  # fmt: skip


def comments_fail(request: RecordedRequest) -> Reply | None:
    """The forge takes no comment (502): the trigger's acknowledgement leaves no mark."""
    if request.method == "POST" and request.path.split("?")[0].endswith(("/comments", "/notes")):
        return Reply.json({"message": "Bad Gateway"}, status=502)
    return None


class MuteGitHub(GitHub):
    def check(self, request: RecordedRequest) -> Reply | None:
        return comments_fail(request) or super().check(request)


class MuteGitLab(GitLabServer):
    def check(self, request: RecordedRequest) -> Reply | None:
        return comments_fail(request) or super().check(request)


@pytest.fixture(scope="module")
def github() -> Iterator[MuteGitHub]:
    with MuteGitHub(token=GITHUB_TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def gitlab() -> Iterator[MuteGitLab]:
    with MuteGitLab(token=GITLAB_TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with new_postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory, github: MuteGitHub, gitlab: MuteGitLab) -> str:
    blueprint = gated_minion(tmp_path_factory.mktemp("once"))
    return f"""
[server]
max_runs = 8

[forge.github]
api_url = "{github.api_url}"
token_env = "TRIGGER_TEST_GITHUB_TOKEN"

[forge.gitlab]
base_url = "{gitlab.base_url}"
token_env = "TRIGGER_TEST_GITLAB_TOKEN"

[server.github]
secret_env = "TRIGGER_TEST_WEBHOOK_SECRET"
blueprint = "{blueprint}"
repo_url = "/nowhere/{{repo}}.git"

[server.gitlab]
secret_env = "TRIGGER_TEST_GITLAB_SECRET"
blueprint = "{blueprint}"
repo_url = "/nowhere/{{repo}}.git"
"""


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, config: str, database: str
) -> Iterator[tuple[Served, Served]]:
    env = {**ENV, "GOLEM_DATABASE_URL": database}
    first = launch(tmp_path_factory.mktemp("first") / "state", config=config, env=env)
    try:
        second = launch(tmp_path_factory.mktemp("second") / "state", config=config, env=env)
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


@pytest.fixture(scope="module")
def key(servers: tuple[Served, Served]) -> str:
    return servers[0].key("default")


def to_gitlab(served: Served, body: dict[str, Any], **ids: str) -> httpx.Response:
    """An Issue Hook as GitLab delivers it, with the given ids (``Idempotency-Key``,
    ``X-Gitlab-Event-UUID``)."""
    headers = {"Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook",
               "X-Gitlab-Token": GITLAB_SECRET, **ids}  # fmt: skip
    with served.client() as client:
        return client.post("/v1/gitlab/webhook", content=json.dumps(body), headers=headers)


def at_once(*sends: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """The answers to ``sends``, made at the same time."""
    with ThreadPoolExecutor(len(sends)) as pool:
        return list(pool.map(lambda send: send(), sends))


def runs_of(served: Served, key: str, issue: str) -> list[str]:
    with served.client(key) as client:
        listed = client.get("/v1/runs", params={"limit": 500}).json()
    return [run["id"] for run in listed if run["request"]["issue"] == issue]


def one_started(answers: list[httpx.Response]) -> str:
    """The run the one ``started`` answer names; every other answer a 200 ``duplicate``
    naming it too."""
    started = [a for a in answers if a.json()["status"] == "started"]
    assert len(started) == 1, [a.text for a in answers]
    run_id: str = started[0].json()["run_id"]
    for answer in answers:
        if answer is not started[0]:
            assert answer.status_code == 200, answer.text
            assert (answer.json()["status"], answer.json()["run_id"]) == ("duplicate", run_id)
            assert "duplicate" in answer.json()["reason"], answer.text
    return run_id


def test_a_github_delivery_racing_to_two_servers_and_redelivered_starts_one_run(
    servers: tuple[Served, Served], key: str, github: MuteGitHub
) -> None:
    first, second = servers
    repo = "octo/raced"
    github.add_issue(repo, 1, "add() subtracts", body="See calculator.py.")
    delivery = str(uuid.uuid4())
    raced = at_once(
        *(lambda s=served: to_github(s, "issues", labelled(repo), delivery=delivery)
          for served in (first, second, first, second))
    )  # fmt: skip
    run_id = one_started(raced)
    for served in (second, first):  # GitHub's Redeliver, to whichever server
        again = to_github(served, "issues", labelled(repo), delivery=delivery)
        assert again.status_code == 200, again.text
        assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
    assert runs_of(first, key, f"{repo}#1") == [run_id]
    assert run_to_end(first, key, run_id, "cancel")["status"] == "cancelled"
    late = to_github(second, "issues", labelled(repo), delivery=delivery)
    assert (late.json()["status"], late.json()["run_id"]) == ("duplicate", run_id)
    assert runs_of(second, key, f"{repo}#1") == [run_id]


def test_a_gitlab_delivery_retried_or_sent_by_two_hooks_starts_one_run(
    servers: tuple[Served, Served], key: str, gitlab: MuteGitLab
) -> None:
    first, second = servers
    project = "group/sub/retried"
    gitlab.add_issue(project, 1, "add() subtracts", "`add(2, 3)` gives -1.")
    hook = gitlab_labelled(project, 1, (), ("golem",))
    idempotency, event = str(uuid.uuid4()), str(uuid.uuid4())
    raced = at_once(
        lambda: to_gitlab(first, hook, **{"Idempotency-Key": idempotency,
                                          "X-Gitlab-Event-UUID": event}),
        lambda: to_gitlab(second, hook, **{"Idempotency-Key": idempotency,
                                           "X-Gitlab-Event-UUID": event}),
    )  # fmt: skip
    run_id = one_started(raced)
    again = [
        # a retry: the same Idempotency-Key, a new request's UUID
        to_gitlab(second, hook, **{"Idempotency-Key": idempotency,
                                   "X-Gitlab-Event-UUID": str(uuid.uuid4())}),
        # the same event through a group's hook: its own key, the event's UUID
        to_gitlab(first, hook, **{"Idempotency-Key": str(uuid.uuid4()),
                                  "X-Gitlab-Event-UUID": event}),
        # a GitLab before Idempotency-Key: the event's UUID alone
        to_gitlab(second, hook, **{"X-Gitlab-Event-UUID": event}),
    ]  # fmt: skip
    for answer in again:
        assert answer.status_code == 200, answer.text
        assert (answer.json()["status"], answer.json()["run_id"]) == ("duplicate", run_id)
    assert runs_of(first, key, f"{project}#1") == [run_id]
    assert run_to_end(second, key, run_id, "cancel")["status"] == "cancelled"


def test_a_redelivery_to_a_server_started_later_on_the_database_starts_nothing(
    tmp_path: Path, servers: tuple[Served, Served], key: str, github: MuteGitHub, config: str,
    database: str,
) -> None:  # fmt: skip
    first, _ = servers
    repo = "octo/restarted-once"
    github.add_issue(repo, 1, "add() subtracts", body="See calculator.py.")
    delivery = str(uuid.uuid4())
    started = to_github(first, "issues", labelled(repo), delivery=delivery)
    assert started.json()["status"] == "started", started.text
    run_id = started.json()["run_id"]
    assert run_to_end(first, key, run_id, "cancel")["status"] == "cancelled"
    env = {**ENV, "GOLEM_DATABASE_URL": database}
    with serving(tmp_path / "state", config=config, env=env) as later:
        again = to_github(later, "issues", labelled(repo), delivery=delivery)
    assert again.status_code == 200, again.text
    assert (again.json()["status"], again.json()["run_id"]) == ("duplicate", run_id)
    assert runs_of(first, key, f"{repo}#1") == [run_id]
