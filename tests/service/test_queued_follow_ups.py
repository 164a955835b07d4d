"""Follow-ups queued while their pull request's run runs, kept in the store: two real
`golem serve` sharing one PostgreSQL database, and a loopback GitHub. Requests queued on
either server start once each when the run ends, one run at a time, whichever server sees
the end first; a request queued on a server killed while the run runs is started by that
server restarted (it alone knew of it), once the run ends.

The follow-up blueprint starts at a gate, so that each test decides when its run ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.store import PendingRecord, SqlStore
from tests.conftest import new_postgres_database
from tests.service.github_triggers import (
    SERVER_ENV,
    TOKEN,
    GitHub,
    acknowledged,
    comments_when,
    deliver,
    gated_minion,
    green,
    labelled,
    new_repo,
    run_to_end,
    trigger_config,
)
from tests.service.review_triggers import (
    SECOND_WRITER,
    WRITER,
    follow_ups,
    gated,
    review_comment,
    runs_after,
)
from tests.service.served import Served, launch

pytestmark = [pytest.mark.bwrap, pytest.mark.postgres]


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with new_postgres_database() as url:
        yield url


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, github: GitHub, database: str
) -> Iterator[tuple[Served, Served]]:
    """Two servers on one database (the last test kills the second one)."""
    home = tmp_path_factory.mktemp("queued")
    remotes = home / "remotes"
    remotes.mkdir(mode=0o755)
    config = trigger_config(github, remotes, gated_minion(home))
    config += f'follow_up_blueprint = "{gated(home, "follow-up")}"\n'
    env = {**SERVER_ENV, "GOLEM_DATABASE_URL": database, "QUEUED_TEST_REMOTES": str(remotes)}
    first = launch(home / "first" / "state", config=config, env=env)
    try:
        second = launch(home / "second" / "state", config=config, env=env)
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


@pytest.fixture(scope="module")
def key(servers: tuple[Served, Served]) -> str:
    return servers[0].key("default")


@pytest.fixture(scope="module")
def opened(servers: tuple[Served, Served], key: str, github: GitHub) -> tuple[str, int]:
    """A pull request golem opened for a labelled issue: its repository and number."""
    first, _ = servers
    remotes = Path(first.env["QUEUED_TEST_REMOTES"])
    repo = new_repo(github, remotes, "queued")
    github.set_permission(repo, WRITER, "write")
    github.set_permission(repo, SECOND_WRITER, "maintain")
    run_id = deliver(first, "issues", labelled(repo)).json()["run_id"]
    assert run_to_end(first, key, run_id)["status"] == "succeeded"
    [pr] = github.pulls(repo)
    return repo, pr["number"]


def pending_in(database: str, pull: str) -> list[PendingRecord]:
    """The requests the shared database keeps pending on ``pull``."""

    async def read() -> list[PendingRecord]:
        store = await SqlStore.connect(database)
        try:
            return await store.pending.in_thread("github", pull)
        finally:
            await store.close()

    return asyncio.run(read())


def running_follow_up(server: Served, key: str, github: GitHub, repo: str, number: int) -> str:
    """A follow-up started on ``server`` and acknowledged on the pull request (so that any
    server sees it run)."""
    asked = deliver(
        server, "pull_request_review_comment", review_comment(repo, number, "@golem go")
    )
    assert asked.json()["status"] == "started", asked.text
    run_id: str = asked.json()["run_id"]
    comments_when(github, repo, acknowledged(run_id), number)
    return run_id


def test_requests_queued_on_two_servers_start_once_each_one_at_a_time(
    servers: tuple[Served, Served], key: str, github: GitHub, opened: tuple[str, int],
    database: str,
) -> None:  # fmt: skip
    first, second = servers
    repo, number = opened
    run_id = running_follow_up(first, key, github, repo, number)
    queued = [
        (second, review_comment(repo, number, "@golem then rename it")),
        (first, review_comment(repo, number, "@golem and the README", author=SECOND_WRITER)),
    ]
    for server, request in queued:
        answer = deliver(server, "pull_request_review_comment", request)
        assert (answer.status_code, answer.json()["status"]) == (202, "queued"), answer.text
        assert answer.json()["run_id"] == run_id
    assert len(pending_in(database, f"{repo}!{number}")) == 2
    assert run_to_end(second, key, run_id, "cancel")["status"] == "cancelled"
    started = [run_id]
    for _ in queued:  # one at a time: each starts once the one before it ended
        later = runs_after(first, key, repo, number, started[-1])
        started.append(later["id"])
        assert run_to_end(first, key, later["id"], "cancel")["status"] == "cancelled"
    assert pending_in(database, f"{repo}!{number}") == []  # nothing left to start again
    ran = follow_ups(first, key, repo, number)
    assert [r["id"] for r in ran][-3:] == started
    assert [(r["request"]["follow_up"]["requested_by"], r["request"]["follow_up"]["request"])
            for r in ran[-2:]] == [
        (WRITER, "@golem then rename it"), (SECOND_WRITER, "@golem and the README"),
    ]  # fmt: skip


def test_a_request_queued_on_a_server_killed_mid_run_starts_once_it_restarts_and_the_run_ends(
    servers: tuple[Served, Served], key: str, github: GitHub, opened: tuple[str, int],
    database: str,
) -> None:  # fmt: skip
    first, second = servers
    repo, number = opened
    run_id = running_follow_up(first, key, github, repo, number)
    request = review_comment(repo, number, "@golem then document it", author=SECOND_WRITER)
    answer = deliver(second, "pull_request_review_comment", request)
    assert (answer.json()["status"], answer.json()["run_id"]) == ("queued", run_id)
    second.kill()  # only it knew of the request: the store keeps it
    config = (second.state_dir.parent / "golem.toml").read_text()
    restarted = launch(second.state_dir, config=config, env=second.env)
    try:
        assert run_to_end(first, key, run_id, "cancel")["status"] == "cancelled"
        later = runs_after(first, key, repo, number, run_id)
        assert later["request"]["follow_up"]["request"] == "@golem then document it"
        assert run_to_end(first, key, later["id"], "cancel")["status"] == "cancelled"
    finally:
        restarted.stop()
    assert pending_in(database, f"{repo}!{number}") == []
    assert [r["id"] for r in follow_ups(first, key, repo, number)][-2:] == [run_id, later["id"]]
