"""Forge strings, attacked: every string a forge hands golem (a CI job's, step's, check's or
status's name, title, summary, description and link, a required check, a log; an issue's
title, body, labels, comments and their authors; a pull request's title and branches; a
review's body and author, a review comment's body, path and author; an error's detail; a
webhook delivery's payload) can be written by whoever writes the pull request's workflow
or the discussion. Each
carries terminal escapes (OSC 8 hyperlinks, OSC 52 clipboard writes, CSI, the C1 CSI
0x9b, C1 OSC), bidirectional overrides, zero-width and tag characters, mentions and
markdown: golem's models of it, read through the real clients from loopback GitHub and
GitLab APIs, hold no control or invisible character, and what a person reads stays."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from golem.core.errors import ForgeError
from golem.forge import Issue
from golem.forge.config import GitHubConfig, GitLabConfig
from golem.forge.github import GitHubForge
from golem.forge.gitlab import GitLabForge
from golem.service.api.webhooks import read_payload
from golem.testing.github_server import GitHubServer, github_error
from golem.testing.gitlab_server import GitLabServer, gitlab_error
from tests.attacks.hostile_strings import HOSTILE, acting

VISIBLE = ("build", "click", "evil", "hidden", "@everyone @admin #1 `x` | y", "done")
"""What a person still reads of it."""
TOKEN = "ghp_golemForgeStrings0123456789abc"  # noqa: S105 - a test token
REPO, PROJECT, SHA = "octo/demo", "group/demo", "d" * 40

Read = Callable[[Any, Any], Awaitable[list[Any]]]


def texts(value: Any) -> str:
    if isinstance(value, BaseModel):
        return texts(value.model_dump())
    if isinstance(value, dict):
        return "\n".join(texts(v) for v in value.values())
    if isinstance(value, list | tuple):
        return "\n".join(texts(v) for v in value)
    return value if isinstance(value, str) else ""


@pytest.fixture
def github() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN) as server:
        yield server


@pytest.fixture
def gitlab() -> Iterator[GitLabServer]:
    with GitLabServer(token=TOKEN) as server:
        server.project(PROJECT)
        yield server


# GitHub ---------------------------------------------------------------------------------


async def github_ci(server: GitHubServer, forge: GitHubForge) -> list[Any]:
    status = await forge.ci_status(REPO, SHA, base="main")
    return [status, *[await forge.ci_failure(REPO, job) for job in status.jobs]]


def actions_job(**fields: Any) -> dict[str, Any]:
    job = {"name": "test", "conclusion": "failure", "steps": [("Run tests", "failure")]}
    return {**job, "log": "##[group]Run tests\n##[error]it failed\n", **fields}


def other_app(**output: Any) -> dict[str, Any]:
    return {"name": "lint", "conclusion": "failure", "app": "super-linter", "output": output}


def github_checks(*runs: dict[str, Any]) -> Callable[[GitHubServer], None]:
    return lambda server: server.set_checks(REPO, SHA, runs)


def github_statuses(**status: Any) -> Callable[[GitHubServer], None]:
    given = {"context": "ci/jenkins", "state": "failure", "description": "failed", **status}
    return lambda server: server.set_statuses(REPO, SHA, [given])


GITHUB_CI: dict[str, Callable[[GitHubServer], None]] = {
    "check run name": github_checks(actions_job(name=HOSTILE)),
    "step name": github_checks(actions_job(steps=[(HOSTILE, "failure")])),
    "job log": github_checks(actions_job(log=f"##[group]Run tests\n##[error]{HOSTILE}\n")),
    "details link": github_checks(actions_job(html_url=HOSTILE)),
    "workflow app": github_checks({**actions_job(), "app": HOSTILE}),
    "check title": github_checks(other_app(title=HOSTILE)),
    "check summary and text": github_checks(other_app(title="t", summary=HOSTILE, text=HOSTILE)),
    "annotation": github_checks(
        {
            **other_app(title="t"),
            "annotations": [
                {"path": HOSTILE, "message": HOSTILE, "start_line": 1}
                | {"annotation_level": "failure"}
            ],
        }
    ),
    "status context": github_statuses(context=HOSTILE),
    "status description": github_statuses(description=HOSTILE),
    "status link": github_statuses(target_url=HOSTILE),
    "required check": lambda server: (
        server.set_checks(REPO, SHA, [actions_job()]),
        server.protect(REPO, "main", [HOSTILE]),
    ),
    "ruleset's required check": lambda server: (
        server.set_checks(REPO, SHA, [actions_job()]),
        server.protect(REPO, "main", [HOSTILE], ruleset=True),
    ),
}


async def github_issue(server: GitHubServer, forge: GitHubForge) -> list[Any]:
    return [await forge.fetch_issue(f"{REPO}#7")]


async def github_review(server: GitHubServer, forge: GitHubForge) -> list[Any]:
    pr = await forge.fetch_pull_request(REPO, 1)
    return [pr, await forge.review_discussion(pr)]


def github_pull(**fields: Any) -> Callable[[GitHubServer], None]:
    def setup(server: GitHubServer) -> None:
        given = {"head": "golem/fix", "title": "fix: x", "body": "b", **fields}
        number = server.add_pull(REPO, given.pop("head"), **given)["number"]
        server.add_review(REPO, number, "alice", "CHANGES_REQUESTED", "please")
        server.add_review_comment(REPO, number, "rename it", author="alice", path="a.py")

    return setup


GITHUB_DISCUSSION: dict[str, tuple[Callable[[GitHubServer], None], Read]] = {
    "issue title": (lambda s: s.add_issue(REPO, 7, HOSTILE), github_issue),
    "issue body": (lambda s: s.add_issue(REPO, 7, "t", body=HOSTILE), github_issue),
    "issue label": (lambda s: s.add_issue(REPO, 7, "t", labels=[HOSTILE]), github_issue),
    "issue comment": (lambda s: s.add_issue(REPO, 7, "t", comments=[HOSTILE]), github_issue),
    "comment author": (
        lambda s: s.add_issue(REPO, 7, "t", comments=[(HOSTILE, "hi")]),
        github_issue,
    ),
    "pull request title and body": (github_pull(title=HOSTILE, body=HOSTILE), github_review),
    "pull request branches": (github_pull(head=HOSTILE, base=HOSTILE), github_review),
    "review body and author": (
        lambda s: (
            github_pull()(s),
            s.add_review(REPO, 1, HOSTILE, "COMMENTED", HOSTILE),
        ),
        github_review,
    ),
    "review comment body, path and author": (
        lambda s: (
            github_pull()(s),
            s.add_review_comment(REPO, 1, HOSTILE, author=HOSTILE, path=HOSTILE),
        ),
        github_review,
    ),
}


def github_forge(server: GitHubServer) -> GitHubForge:
    return GitHubForge(GitHubConfig(api_url=server.api_url), token=TOKEN, backoff=0)


@pytest.mark.parametrize("field", list(GITHUB_CI))
async def test_a_github_ci_string_reaches_golem_without_escapes_or_hidden_text(
    github: GitHubServer, field: str
) -> None:
    GITHUB_CI[field](github)
    read = await github_ci(github, github_forge(github))
    assert acting(read) == []
    assert all(words in texts(read) for words in VISIBLE)


@pytest.mark.parametrize("field", list(GITHUB_DISCUSSION))
async def test_a_github_discussion_string_reaches_golem_without_escapes_or_hidden_text(
    github: GitHubServer, field: str
) -> None:
    setup, reader = GITHUB_DISCUSSION[field]
    setup(github)
    read = await reader(github, github_forge(github))
    assert acting(read) == []
    assert all(words in texts(read) for words in VISIBLE)


async def test_a_github_errors_detail_reaches_golem_without_escapes(github: GitHubServer) -> None:
    github.push(github_error(422, HOSTILE))
    with pytest.raises(ForgeError) as refused:
        await github_forge(github).comment(Issue(title="t", repo=REPO, number=7), "hello")
    assert acting(refused.value.message) == []
    assert "@everyone" in refused.value.message


# GitLab ---------------------------------------------------------------------------------


async def gitlab_ci(server: GitLabServer, forge: GitLabForge) -> list[Any]:
    status = await forge.ci_status(PROJECT, SHA, base="main")
    return [status, *[await forge.ci_failure(PROJECT, job) for job in status.jobs]]


def pipeline(**job: Any) -> Callable[[GitLabServer], None]:
    given = {"name": "test", "status": "failed", "trace": "$ pytest\nit failed\n", **job}
    return lambda server: setattr(server, "ci", lambda project, sha: [given])


def gitlab_status(**fields: Any) -> Callable[[GitLabServer], None]:
    given = {"name": "jenkins", "description": "failed", **fields}
    name = given.pop("name")
    return lambda server: server.add_status(PROJECT, SHA, name, "failed", **given)


GITLAB_CI: dict[str, Callable[[GitLabServer], None]] = {
    "job name": pipeline(name=HOSTILE),
    "stage": pipeline(stage=HOSTILE),
    "failure reason": pipeline(failure_reason=HOSTILE),
    "job trace": pipeline(trace=f"$ pytest\n{HOSTILE}\n"),
    "job link": pipeline(web_url=HOSTILE),
    "status name": gitlab_status(name=HOSTILE),
    "status description": gitlab_status(description=HOSTILE),
    "status link": gitlab_status(target_url=HOSTILE),
}


async def gitlab_issue(server: GitLabServer, forge: GitLabForge) -> list[Any]:
    return [await forge.fetch_issue(f"{PROJECT}#7")]


async def gitlab_review(server: GitLabServer, forge: GitLabForge) -> list[Any]:
    pr = await forge.fetch_pull_request(PROJECT, 1)
    return [pr, await forge.review_discussion(pr)]


def merge_request(
    *notes: tuple[str, str], path: str = "a.py", **fields: Any
) -> Callable[[GitLabServer], None]:
    def setup(server: GitLabServer) -> None:
        project = server.project(PROJECT)
        given = {"source": "golem/fix", "target": "main", "title": "fix: x", **fields}
        mr = project.new_mr(given.pop("source"), given.pop("target"), given.pop("title"), **given)
        project.add_discussion(mr["iid"], list(notes) or [("alice", "rename")], path=path, line=1)

    return setup


GITLAB_DISCUSSION: dict[str, tuple[Callable[[GitLabServer], None], Read]] = {
    "issue title": (lambda s: s.add_issue(PROJECT, 7, HOSTILE), gitlab_issue),
    "issue description": (lambda s: s.add_issue(PROJECT, 7, "t", HOSTILE), gitlab_issue),
    "issue label": (lambda s: s.add_issue(PROJECT, 7, "t", labels=[HOSTILE]), gitlab_issue),
    "issue note": (lambda s: s.add_issue(PROJECT, 7, "t", notes=[HOSTILE]), gitlab_issue),
    "note author": (lambda s: s.add_issue(PROJECT, 7, "t", notes=[(HOSTILE, "hi")]), gitlab_issue),
    "merge request title and description": (
        merge_request(title=HOSTILE, description=HOSTILE),
        gitlab_review,
    ),
    "merge request branches": (merge_request(source=HOSTILE, target=HOSTILE), gitlab_review),
    "review note body and author": (merge_request((HOSTILE, HOSTILE)), gitlab_review),
    "review note path": (merge_request(path=HOSTILE), gitlab_review),
}


def gitlab_forge(server: GitLabServer) -> GitLabForge:
    return GitLabForge(GitLabConfig(base_url=server.base_url), token=TOKEN, backoff=0)


@pytest.mark.parametrize("field", list(GITLAB_CI))
async def test_a_gitlab_ci_string_reaches_golem_without_escapes_or_hidden_text(
    gitlab: GitLabServer, field: str
) -> None:
    GITLAB_CI[field](gitlab)
    read = await gitlab_ci(gitlab, gitlab_forge(gitlab))
    assert acting(read) == []
    assert all(words in texts(read) for words in VISIBLE)


@pytest.mark.parametrize("field", list(GITLAB_DISCUSSION))
async def test_a_gitlab_discussion_string_reaches_golem_without_escapes_or_hidden_text(
    gitlab: GitLabServer, field: str
) -> None:
    setup, reader = GITLAB_DISCUSSION[field]
    setup(gitlab)
    read = await reader(gitlab, gitlab_forge(gitlab))
    assert acting(read) == []
    assert all(words in texts(read) for words in VISIBLE)


async def test_a_gitlab_errors_detail_reaches_golem_without_escapes(gitlab: GitLabServer) -> None:
    gitlab.push(gitlab_error(400, {"title": [HOSTILE]}))
    with pytest.raises(ForgeError) as refused:
        await gitlab_forge(gitlab).comment(Issue(title="t", repo=PROJECT, number=7), "hello")
    assert acting(refused.value.message) == []
    assert "@everyone" in refused.value.message


# Webhook deliveries ---------------------------------------------------------------------

DELIVERIES: dict[str, dict[str, Any]] = {
    "github issue comment": {
        "action": "created",
        "issue": {"number": 1, "title": HOSTILE, "labels": [{"name": HOSTILE}]},
        "comment": {"body": f"@golem {HOSTILE}", "user": {"login": HOSTILE}},
        "repository": {"full_name": REPO},
        "sender": {"login": HOSTILE},
    },
    "github review": {
        "action": "submitted",
        "review": {"body": HOSTILE, "user": {"login": HOSTILE}, "state": "changes_requested"},
        "pull_request": {"number": 1, "title": HOSTILE, "head": {"ref": HOSTILE}},
        "repository": {"full_name": REPO},
        "sender": {"login": HOSTILE},
    },
    "gitlab note": {
        "object_kind": "note",
        "user": {"username": HOSTILE, "name": HOSTILE},
        "project": {"path_with_namespace": PROJECT},
        "object_attributes": {"note": f"@golem {HOSTILE}", "noteable_type": "MergeRequest"},
        "merge_request": {"iid": 1, "title": HOSTILE, "source_branch": HOSTILE},
    },
}


@pytest.mark.parametrize("delivery", list(DELIVERIES))
def test_a_webhook_deliverys_strings_are_cleaned_where_they_enter(delivery: str) -> None:
    body = json.dumps(DELIVERIES[delivery]).encode()
    payload = read_payload(
        body, "application/json", {}
    )  # names: tests/service/test_hostile_input.py
    assert acting(dict(payload)) == []
    assert all(words in texts(dict(payload)) for words in VISIBLE)
