"""Hostile input at the server's boundary, against a real `golem serve` with both forges'
triggers and loopback GitHub and GitLab: JSON nested past ``server.max_json_depth`` is a
400 wherever it comes in (a signed webhook, an API body, an MCP request, a WebSocket
message) and the server goes on; a body over its size is a 413 naming the limit; a name
that could leave its place in a forge's URL path (a repository, a project path, an issue
reference, a branch, a login, a thread) is a 422 naming its field, before any forge call.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from golem.testing.gitlab_server import GitLabServer
from tests.service.github_triggers import GitHub, commented, labelled
from tests.service.gitlab_triggers import noted, payload
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

GITHUB_TOKEN = "ghp_hostiletest0123456789abcdef"  # noqa: S105 - a test token
GITLAB_TOKEN = "glpat-hostiletest0123456789"  # noqa: S105 - a test token
GITHUB_SECRET = "hostile-github-secret-0123"  # noqa: S105 - a test secret
GITLAB_SECRET = "hostile-gitlab-secret-0123"  # noqa: S105 - a test secret
DEPTH_OPTION = "server.max_json_depth"
DEEP = b"[" * 200_000 + b"]" * 200_000
"""JSON nested 200,000 levels deep: Python's own parser gives up with a RecursionError."""
ENV = {
    "HOSTILE_GITHUB_TOKEN": GITHUB_TOKEN, "HOSTILE_GITLAB_TOKEN": GITLAB_TOKEN,
    "HOSTILE_GITHUB_SECRET": GITHUB_SECRET, "HOSTILE_GITLAB_SECRET": GITLAB_SECRET,
}  # fmt: skip


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=GITHUB_TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def gitlab() -> Iterator[GitLabServer]:
    with GitLabServer(token=GITLAB_TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, gitlab: GitLabServer
) -> Iterator[Served]:
    config = f"""
[forge]
provider = "github"

[forge.github]
api_url = "{github.api_url}"
token_env = "HOSTILE_GITHUB_TOKEN"

[forge.gitlab]
base_url = "{gitlab.base_url}"
token_env = "HOSTILE_GITLAB_TOKEN"

[server.github]
secret_env = "HOSTILE_GITHUB_SECRET"
repo_url = "/nowhere/{{repo}}.git"

[server.gitlab]
secret_env = "HOSTILE_GITLAB_SECRET"
repo_url = "/nowhere/{{repo}}.git"
"""
    home = tmp_path_factory.mktemp("hostile")
    with serving(home / "state", config=config, env=ENV) as server:
        yield server


@pytest.fixture
def key(served: Served) -> str:
    """A trusted key of a tenant of the test's own (its runs may name local paths)."""
    return served.tenant_key("t", "trusted")


def to_github(served: Served, event: str, body: bytes) -> httpx.Response:
    """``body`` as GitHub delivers it: signed with the webhook's secret."""
    digest = hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json", "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": f"sha256={digest}",
    }  # fmt: skip
    with served.client() as client:
        return client.post("/v1/github/webhook", content=body, headers=headers)


def to_gitlab(served: Served, event: str, body: bytes) -> httpx.Response:
    """``body`` as GitLab delivers it: with the secret token and the event's UUID."""
    headers = {
        "Content-Type": "application/json", "X-Gitlab-Event": event,
        "X-Gitlab-Event-UUID": str(uuid.uuid4()), "X-Gitlab-Token": GITLAB_SECRET,
    }  # fmt: skip
    with served.client() as client:
        return client.post("/v1/gitlab/webhook", content=body, headers=headers)


def nested(document: dict[str, Any], deep: bytes = DEEP) -> bytes:
    """``document`` as JSON, its ``"DEEP"`` value replaced by ``deep``."""
    return json.dumps(document).encode().replace(b'"DEEP"', deep, 1)


def log_since(served: Served, start: int) -> str:
    return "".join(served.output[start:])


def assert_refused_for_depth(answer: httpx.Response) -> None:
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert DEPTH_OPTION in answer.json()["detail"], answer.text


def test_json_nested_past_the_limit_is_a_400_wherever_it_comes_in_and_the_server_goes_on(
    served: Served, key: str
) -> None:
    start = len(served.output)
    label = labelled("octo/deep")
    label["label"]["description"] = "DEEP"
    assert_refused_for_depth(to_github(served, "issues", nested(label)))
    note = payload("note_hook_issue")
    note["object_attributes"]["position"] = "DEEP"
    assert_refused_for_depth(to_gitlab(served, "Note Hook", nested(note)))
    with served.client(key) as client:
        run = nested({"repo": "/nowhere/x.git", "task": "DEEP"})
        headers = {"Content-Type": "application/json"}
        assert_refused_for_depth(client.post("/v1/runs", content=run, headers=headers))
        assert_refused_for_depth(client.post("/v1/runs", content=DEEP))  # no content type
        mcp = nested({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "DEEP"})
        mcp_headers = {**headers, "Accept": "application/json, text/event-stream"}
        assert_refused_for_depth(client.post("/mcp", content=mcp, headers=mcp_headers))
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/runs").json() == []
    ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    assert to_github(served, "ping", ping).json()["status"] == "ok"
    assert "Traceback" not in log_since(served, start), log_since(served, start)[-3000:]


def test_a_websocket_message_nested_past_the_limit_closes_the_socket_naming_it(
    served: Served, key: str
) -> None:
    with served.client(key) as client:
        session = client.post("/v1/sessions", json={}).json()["id"]
        try:
            url = served.url.replace("http://", "ws://") + f"/v1/sessions/{session}/calls"
            with connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
                call = nested({"id": 1, "op": "execute", "request": {"cmd": "true", "x": "DEEP"}})
                ws.send(call.decode())
                frame = json.loads(ws.recv(60))
                with pytest.raises(ConnectionClosed) as closed:
                    ws.recv(60)
            assert frame["type"] == "error", frame
            assert DEPTH_OPTION in frame["message"], frame
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 4400
            done = client.post(f"/v1/sessions/{session}/exec", json={"cmd": "echo alive"})
            assert done.status_code == 200, done.text
        finally:
            client.delete(f"/v1/sessions/{session}")


def test_a_delivery_over_the_size_limit_is_a_413_naming_it(served: Served) -> None:
    oversized = b'{"zen": "' + b"z" * (17 << 20) + b'"}'
    declared = to_github(served, "ping", oversized)
    assert declared.status_code == 413, declared.text[:500]
    assert "max_body_bytes" in declared.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(oversized), 1 << 20):
            yield oversized[start : start + (1 << 20)]

    headers = {
        "Content-Type": "application/json", "X-Gitlab-Event": "Issue Hook",
        "X-Gitlab-Event-UUID": str(uuid.uuid4()), "X-Gitlab-Token": GITLAB_SECRET,
    }  # fmt: skip
    with served.client() as client:
        chunked = client.post("/v1/gitlab/webhook", content=chunks(), headers=headers)
    assert chunked.status_code == 413, chunked.text[:500]
    assert "max_body_bytes" in chunked.json()["detail"]


# Names that would leave their place in a URL path, or change what it asks: dot segments,
# separators, percent-escapes, a query, a fragment, white space, control characters.
HOSTILE_SEGMENTS = [
    "..",
    ".",
    "%2e%2e",
    "a%2fb",
    "a?b=1",
    "a#b",
    "a b",
    "a\\b",
    "a\nb",
    "a\n",
    "a\x00b",
    "ä",
    "",
]


def github_repos() -> list[str]:
    names = ["../..", "octo/..", "../octo", "octo/x/../../y", "octo//x", "/octo/x", "octo/x/"]
    return names + [f"octo/{segment}" for segment in HOSTILE_SEGMENTS]


def gitlab_projects() -> list[str]:
    names = ["../..", "group/..", "group/../x", "group//x", "/group/x", "group/x/", "group"]
    return names + [f"group/{segment}" for segment in HOSTILE_SEGMENTS]


def review_comment(login: str) -> dict[str, Any]:
    """A ``pull_request_review_comment`` by ``login`` mentioning golem."""
    user = {"login": login, "type": "User"}
    comment = {"id": 7001, "body": "@golem fix", "user": user, "path": "a.py", "line": 1}
    pull = {"number": 3, "state": "open", "body": ""}
    return {"action": "created", "comment": comment, "pull_request": pull,
            "repository": {"full_name": "octo/reviewed"}, "sender": user}  # fmt: skip


def github_cases() -> list[tuple[str, str, Callable[[str], dict[str, Any]], list[Any]]]:
    def with_number(number: str) -> dict[str, Any]:
        delivery = labelled("octo/numbered")
        delivery["issue"]["number"] = number
        return delivery

    def reviewed_by(login: str) -> dict[str, Any]:
        review = {"id": 9, "user": {"login": login, "type": "User"}, "state": "changes_requested"}
        return {"action": "submitted", "review": {**review, "body": "no"},
                "pull_request": {"number": 3, "state": "open"},
                "repository": {"full_name": "octo/reviewed"}, "sender": review["user"]}  # fmt: skip

    logins = ["../../user", "a/b", "a?b", "a#b", "a b", "..", "%2e%2e", "a\\b", "a\n"]
    return [
        ("issues", "repository.full_name", labelled, github_repos()),
        ("issue_comment", "repository.full_name",
         lambda repo: commented(repo, "@golem fix"), github_repos()),
        ("issues", "issue.number", with_number, [-1, 0, 2**40, "1", 1.5, True]),
        ("pull_request_review_comment", "comment.user.login", review_comment, logins),
        ("pull_request_review", "review.user.login", reviewed_by, logins),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("event", "field", "make", "values"),
    github_cases(),
    ids=[f"{event}-{field}" for event, field, _, _ in github_cases()],
)
def test_a_github_delivery_naming_a_hostile_name_is_a_422_naming_its_field_and_asks_github_nothing(
    served: Served,
    github: GitHub,
    event: str,
    field: str,
    make: Callable[[Any], dict[str, Any]],
    values: list[Any],
) -> None:
    asked = len(github.requests)
    for value in values:
        answer = to_github(served, event, json.dumps(make(value)).encode())
        assert answer.status_code == 422, (value, answer.text)
        assert answer.json()["errors"][0]["field"] == field, (value, answer.text)
        assert field in answer.json()["detail"], (value, answer.text)
    assert github.requests[asked:] == []


def gitlab_cases() -> list[tuple[str, str, Callable[[Any], dict[str, Any]], list[Any]]]:
    def issue_in(project: str) -> dict[str, Any]:
        hook = payload("issue_hook")
        hook["project"]["path_with_namespace"] = project
        return hook

    def noted_in(project: str) -> dict[str, Any]:
        hook = noted("Issue", "@golem fix")
        hook["project"]["path_with_namespace"] = project
        return hook

    def issue_numbered(iid: Any) -> dict[str, Any]:
        hook = payload("issue_hook")
        hook["object_attributes"]["iid"] = iid
        return hook

    def in_thread(discussion: str) -> dict[str, Any]:
        hook = noted("MergeRequest", "@golem fix")
        hook["object_attributes"]["discussion_id"] = discussion
        return hook

    def by_user(user_id: Any) -> dict[str, Any]:
        hook = noted("MergeRequest", "@golem fix")
        hook["user"]["id"] = user_id
        return hook

    threads = ["../../x", "a/b", "a?b", "a#b", "a b", "..", "%2e%2e", "a\\b", "a\n", "", 7]
    return [
        ("Issue Hook", "project.path_with_namespace", issue_in, gitlab_projects()),
        ("Note Hook", "project.path_with_namespace", noted_in, gitlab_projects()),
        ("Issue Hook", "object_attributes.iid", issue_numbered, [-1, 0, 2**40, "23", True]),
        ("Note Hook", "object_attributes.discussion_id", in_thread, threads),
        ("Note Hook", "user.id", by_user, [-1, 0, "1/../2", "x"]),
    ]


@pytest.mark.parametrize(
    ("event", "field", "make", "values"),
    gitlab_cases(),
    ids=[f"{event.split()[0]}-{field}" for event, field, _, _ in gitlab_cases()],
)
def test_a_gitlab_delivery_naming_a_hostile_name_is_a_422_naming_its_field_and_asks_gitlab_nothing(
    served: Served,
    gitlab: GitLabServer,
    event: str,
    field: str,
    make: Callable[[Any], dict[str, Any]],
    values: list[Any],
) -> None:
    asked = len(gitlab.requests)
    for value in values:
        answer = to_gitlab(served, event, json.dumps(make(value)).encode())
        assert answer.status_code == 422, (value, answer.text)
        assert answer.json()["errors"][0]["field"] == field, (value, answer.text)
        assert field in answer.json()["detail"], (value, answer.text)
    assert gitlab.requests[asked:] == []


def run_cases() -> list[tuple[str, Callable[[Any], dict[str, Any]], list[Any]]]:
    def on_github(**fields: Any) -> dict[str, Any]:
        return {"repo": "/nowhere/octo.git", "forge": "github", **fields}

    def follow_up(**fields: Any) -> dict[str, Any]:
        asked = {"repo": "octo/x", "number": 1, "parent_run": "run-1", "request": "fix"}
        return on_github(follow_up={**asked, **fields})

    branches = [
        "../main", "a/../b", "a?b", "a#b", "a%2fb", "-x", "a b", "a..b", ".x", "a/.x",
        "a//b", "x.lock", "x/", "a\\b", "a\nb", "main\n", "ä", "", "@", "a@{1}",
    ]  # fmt: skip
    github_refs = [f"{repo}#1" for repo in github_repos()]
    github_refs += ["https://github.com/../../issues/1", "https://github.com/octo/x%2f../issues/1"]
    gitlab_refs = [f"{project}#1" for project in gitlab_projects()]
    gitlab_refs += [f"{project}!1" for project in gitlab_projects()[:4]]
    return [
        ("issue", lambda ref: on_github(issue=ref), github_refs),
        ("issue", lambda ref: {"repo": "/nowhere/g.git", "forge": "gitlab", "issue": ref},
         gitlab_refs),
        ("base", lambda branch: on_github(task="fix it", base=branch), branches),
        ("follow_up.repo", lambda repo: follow_up(repo=repo), github_repos()),
        ("follow_up.number", lambda number: follow_up(number=number), [-1, 0, 2**40]),
        ("follow_up.thread", lambda thread: follow_up(thread=thread),
         ["../../x", "1/../../2", "1?x", "1#x", "1 2", "..", "%2e%2e", "1\n", ""]),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("field", "make", "values"), run_cases(), ids=[field for field, _, _ in run_cases()]
)
def test_a_run_request_naming_a_hostile_name_is_a_422_naming_its_field_before_any_forge_call(
    served: Served,
    key: str,
    github: GitHub,
    gitlab: GitLabServer,
    field: str,
    make: Callable[[Any], dict[str, Any]],
    values: list[Any],
) -> None:
    asked = (len(github.requests), len(gitlab.requests))
    with served.client(key) as client:
        for value in values:
            answer = client.post("/v1/runs", json=make(value))
            assert answer.status_code == 422, (value, answer.text)
            assert field in {e["field"] for e in answer.json()["errors"]}, (value, answer.text)
            assert field in answer.json()["detail"], (value, answer.text)
        assert client.get("/v1/runs").json() == []
    assert (github.requests[asked[0] :], gitlab.requests[asked[1] :]) == ([], [])
