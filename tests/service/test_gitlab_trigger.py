"""The GitLab trigger of `golem serve`, against a real server: deliveries carry the webhook's
secret token (401 without it, 503 for all while no secret is configured); an issue newly
labelled for golem, or a note mentioning it, starts a run; a note on a merge request golem
opened starts a follow-up when its author may push, and a polite refusal, once, otherwise;
everything else is answered and ignored with a reason. Payloads are GitLab's documented
examples (tests/service/payloads/gitlab), changed only where a test needs it.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.core.server_config import GitLabTriggerConfig
from golem.service.trigger import Ignored, IssueCall, ReviewCall
from golem.service.trigger.gitlab_events import read_delivery
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

SECRET = "gitlab-webhook-token-0123456789"  # noqa: S105 - a test secret
PAYLOADS = Path(__file__).parent / "payloads" / "gitlab"
SERVER_ENV = {"TRIGGER_TEST_GITLAB_SECRET": SECRET}
CONFIG = """
[server.gitlab]
secret_env = "TRIGGER_TEST_GITLAB_SECRET"
label = "golem"
handle = "@golem"
repo_url = "/nowhere/{repo}.git"
"""


def payload(name: str) -> dict[str, Any]:
    """GitLab's example payload ``name`` (a fresh copy)."""
    loaded: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return copy.deepcopy(loaded)


def labels(*names: str) -> list[dict[str, Any]]:
    """Labels as a GitLab payload lists them."""
    return [{"id": 200 + i, "title": name, "type": "ProjectLabel"} for i, name in enumerate(names)]


def labelled(
    project: str, iid: int, before: tuple[str, ...], after: tuple[str, ...]
) -> dict[str, Any]:
    """An Issue Hook: issue ``iid``'s labels changed from ``before`` to ``after``."""
    hook = payload("issue_hook")
    hook["project"]["path_with_namespace"] = project
    hook["object_attributes"].update(iid=iid, action="update", state="opened")
    hook["labels"] = labels(*after)
    hook["changes"]["labels"] = {"previous": labels(*before), "current": labels(*after)}
    return hook


def deliver(
    served: Served,
    event: str,
    body: dict[str, Any],
    *,
    token: str | None = SECRET,
    delivery: str | None = None,
) -> httpx.Response:
    """POST a delivery as GitLab does: JSON, with the secret token and an event UUID."""
    headers = {
        "Content-Type": "application/json",
        "X-Gitlab-Event": event,
        "X-Gitlab-Event-UUID": delivery or str(uuid.uuid4()),
    }
    if token is not None:
        headers["X-Gitlab-Token"] = token
    with served.client() as client:
        return client.post("/v1/gitlab/webhook", content=json.dumps(body), headers=headers)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("gitlab-trigger")
    with serving(home / "state", config=CONFIG, env=SERVER_ENV) as server:
        yield server


def test_a_delivery_without_the_secret_token_is_refused(served: Served) -> None:
    hook = labelled("group/sub/project", 1, (), ("golem",))
    missing = deliver(served, "Issue Hook", hook, token=None)
    wrong = deliver(served, "Issue Hook", hook, token="not-the-token")  # noqa: S106
    for answer in (missing, wrong):
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
    assert "X-Gitlab-Token" in wrong.json()["detail"]
    with served.admin() as admin:
        assert admin.get("/v1/runs").json() == []


def test_without_a_secret_every_delivery_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path / "state", config=CONFIG, env={}) as server:
        hook = labelled("group/project", 1, (), ("golem",))
        answers = [
            deliver(server, "Issue Hook", hook),
            deliver(server, "Pipeline Hook", payload("pipeline_hook"), token=None),
        ]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert "$TRIGGER_TEST_GITLAB_SECRET" in answer.json()["detail"]


def test_deliveries_that_ask_for_nothing_start_nothing_and_say_why(served: Served) -> None:
    project = "group/sub/unasked"
    closed = labelled(project, 2, (), ("golem",))
    closed["object_attributes"]["state"] = "closed"
    asks = [
        ("Pipeline Hook", payload("pipeline_hook"), "by polling"),
        ("Merge Request Hook", {"object_kind": "merge_request"}, "start no runs"),
        ("Issue Hook", payload("issue_hook"), "was not added"),
        ("Issue Hook", labelled(project, 2, ("golem",), ("golem", "bug")), "was not added"),
        ("Issue Hook", labelled(project, 2, (), ("bug",)), "was not added"),
        ("Issue Hook", closed, "is closed"),
        ("Issue Hook", {"object_kind": "issue", "project": {}}, "names no project"),
    ]
    for event, body, reason in asks:
        answer = deliver(served, event, body)
        assert answer.status_code == 202, (event, answer.text)
        assert answer.json()["status"] == "ignored"
        assert reason in answer.json()["reason"], (event, answer.json())
    no_uuid = httpx.post(
        f"{served.url}/v1/gitlab/webhook",
        content=json.dumps(payload("pipeline_hook")),
        headers={"X-Gitlab-Event": "Pipeline Hook", "X-Gitlab-Token": SECRET},
    )
    assert no_uuid.status_code == 400, no_uuid.text
    with served.admin() as admin:
        assert admin.get("/v1/runs").json() == []


def noted(kind: str, text: str, *, author: str = "root", author_id: int = 1) -> dict[str, Any]:
    """A Note Hook: ``author`` wrote ``text`` on issue 17 or merge request 1."""
    name = "note_hook_issue" if kind == "Issue" else "note_hook_merge_request"
    hook = payload(name)
    hook["object_attributes"]["note"] = text
    hook["user"].update(username=author, id=author_id)
    return hook


def test_a_note_on_a_merge_request_asks_for_a_follow_up_in_its_discussion() -> None:
    hook = noted("MergeRequest", "@golem please handle the empty list", author_id=42)
    call = read_delivery("Note Hook", hook, GitLabTriggerConfig(), own_login="golem-bot")
    assert isinstance(call, ReviewCall)
    assert (call.repo, call.number, call.key) == ("gitlab-org/gitlab-test", 1,
                                                  "gitlab-org/gitlab-test!1")  # fmt: skip
    assert (call.sender, call.user) == ("root", "42")  # permission is asked by user id
    assert call.thread == "f3ab1bd8a9a04b7e9f5e61c2ba5a2d6c2dbd2c0e"
    assert call.request == "@golem please handle the empty list"


def test_a_note_on_an_issue_asks_for_a_run_by_a_member() -> None:
    call = read_delivery(
        "Note Hook", noted("Issue", "@golem fix this"), GitLabTriggerConfig(), None
    )
    assert isinstance(call, IssueCall)
    assert (call.ref, call.member) == ("gitlab-org/gitlab-test#17", "1")


def test_notes_that_ask_nothing_are_ignored() -> None:
    config = GitLabTriggerConfig()
    system = noted("MergeRequest", "@golem added 1 commit")
    system["object_attributes"]["system"] = True
    edited = noted("Issue", "@golem fix")
    edited["object_attributes"]["action"] = "update"
    merged = noted("MergeRequest", "@golem fix")
    merged["merge_request"]["state"] = "merged"
    commit = noted("Issue", "@golem fix")
    commit["object_attributes"]["noteable_type"] = "Commit"
    asks = [
        (noted("Issue", "> @golem fix\n\nno"), "does not mention"),
        (noted("MergeRequest", "@golem again", author="golem-bot"), "golem's own account"),
        (noted("Issue", "done <!-- golem:done run-1 -->"), "golem's own"),
        (system, "GitLab's or golem's own"),
        (edited, "only new notes"),
        (merged, "is merged"),
        (commit, "Commit"),
    ]
    for hook, reason in asks:
        found = read_delivery("Note Hook", hook, config, own_login="golem-bot")
        assert isinstance(found, Ignored), (hook["object_attributes"], found)
        assert reason in found.reason
    quiet = GitLabTriggerConfig(follow_up_on=["changes_requested"])
    found = read_delivery("Note Hook", noted("MergeRequest", "@golem fix"), quiet, None)
    assert isinstance(found, Ignored)
