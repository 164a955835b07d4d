"""An issue's comments past Linear's first page, read through golem's Linear client against
the loopback GraphQL API (which pages an issue's comments as Linear does: 50 unless asked,
``pageInfo``'s cursor for the rest): a run's task reads every comment, and a status comment
golem posted after the fiftieth is found (adopted), never posted a second time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from golem.core.linear_config import LinearConfig
from golem.service.linear.client import LinearClient
from golem.service.linear.reporter import LinearReporter, LinearThread
from golem.service.linear.reports import status_mark
from golem.store import ThreadRecord
from golem.testing.linear_server import LinearServer, Team

TOKEN = "lin_api_pagingtest0123456789abcdef"  # noqa: S105 - a test token
ENV = "LINEAR_PAGING_TEST_TOKEN"


@pytest.fixture(scope="module")
def linear() -> Iterator[LinearServer]:
    with LinearServer(token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def team(linear: LinearServer) -> Team:
    return linear.add_team("ENG")


@pytest.fixture
def client(linear: LinearServer, monkeypatch: pytest.MonkeyPatch) -> LinearClient:
    monkeypatch.setenv(ENV, TOKEN)
    return LinearClient(LinearConfig(api_url=linear.graphql_url, token_env=ENV))


def many_comments(linear: LinearServer, team: Team, count: int) -> dict[str, object]:
    """An issue with ``count`` comments by a person."""
    ada = linear.add_user("Ada", teams=(team,))
    said = tuple((ada, f"comment {n}") for n in range(count))
    return linear.add_issue(team, "Long discussion", "It breaks.", comments=said)


async def test_an_issues_task_reads_every_comment_past_linears_first_page(
    linear: LinearServer, team: Team, client: LinearClient
) -> None:
    issue = many_comments(linear, team, 260)
    read = await client.issue(str(issue["id"]))
    assert [c.body for c in read.comments] == [f"comment {n}" for n in range(260)]


async def test_golems_status_comment_after_the_fiftieth_is_found_not_posted_again(
    linear: LinearServer, team: Team, client: LinearClient
) -> None:
    issue = many_comments(linear, team, 75)
    issue_id = str(issue["id"])
    status = await client.comment(issue_id, f"golem is working on it\n\n{status_mark('run-42')}")
    link = LinearThread(identifier="ENG-1", team_id=team.id)
    thread = ThreadRecord(
        source="linear", thread=issue_id, run_id="run-42", detail=link.model_dump_json()
    )

    async def no_secrets(_tenant: str | None) -> list[str]:
        return []

    async def golem() -> str | None:
        return str(linear.viewer["id"])

    reporter = LinearReporter(client, client.config, no_secrets, golem)
    assert await reporter.find_status(thread) == status
