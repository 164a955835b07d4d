"""The loopback GitLab's webhook payloads for a real `golem serve` (fixtures)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from golem.testing.gitlab_server import GitLabServer
from tests.service.served import Served

PAYLOADS = Path(__file__).parent / "payloads" / "gitlab"

TOKEN = "glpat-triggertest0123456789"  # noqa: S105 - a test token

SECRET = "gitlab-webhook-token-0123456789"  # noqa: S105 - a test secret


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


def passing(project: str, sha: str) -> list[dict[str, Any]]:
    """Every commit's pipeline: one job, passed."""
    return [{"name": "test", "status": "success"}]


@pytest.fixture(scope="module")
def gitlab() -> Iterator[GitLabServer]:
    with GitLabServer(token=TOKEN) as server:
        server.ci = passing
        yield server


def noted(kind: str, text: str, *, author: str = "root", author_id: int = 1) -> dict[str, Any]:
    """A Note Hook: ``author`` wrote ``text`` on issue 17 or merge request 1."""
    name = "note_hook_issue" if kind == "Issue" else "note_hook_merge_request"
    hook = payload(name)
    hook["object_attributes"]["note"] = text
    hook["user"].update(username=author, id=author_id)
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
