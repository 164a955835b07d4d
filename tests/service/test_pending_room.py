"""A pending request whose start finds the run queue full is started when the queue has
room again, by the server that kept it and without a restart: real `golem serve` on one
PostgreSQL database, a queue bound of one (`max_queued = 1`, one runner each), and a
loopback GitHub.

The run the request waits for ends with no runner of its own freed (its server was killed;
`golem runs cancel` ends the orphan): the queue is still full then, and room comes only when the
test ends the run that holds the other server's runner, which then takes the queued run.
The blueprint starts at a gate, so that each test decides when its runs end.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from httpx_sse import connect_sse

from tests.conftest import new_postgres_database
from tests.service.github_triggers import (
    SERVER_ENV,
    TOKEN,
    GitHub,
    acknowledged,
    commented,
    comments_when,
    deliver,
    gated_minion,
    green,
    labelled,
    new_repo,
    run_to_end,
    runs_of,
    trigger_config,
)
from tests.service.polling import eventually
from tests.service.served import Served, launch

pytestmark = [pytest.mark.bwrap, pytest.mark.postgres]

BOUND = '[server]\nmax_runs = 1\nmax_queued = 1\noverflow = "queue"\n'


@pytest.fixture(scope="module")
def github() -> Iterator[GitHub]:
    with GitHub(token=TOKEN) as server:
        server.ci = green
        yield server


def test_a_pending_request_finding_the_queue_full_starts_when_a_run_leaves_the_queue(
    tmp_path: Path, github: GitHub
) -> None:
    remotes = tmp_path / "remotes"
    remotes.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    config = BOUND + trigger_config(github, remotes, gated_minion(tmp_path))
    waited, holding, filling = (new_repo(github, remotes, n) for n in ("asked", "held", "full"))
    with new_postgres_database() as database:
        env = {**SERVER_ENV, "GOLEM_DATABASE_URL": database}
        keeper = launch(tmp_path / "keeper" / "state", config=config, env=env)
        try:
            key = keeper.key("default")
            held = _started(keeper, github, holding)  # the keeper's one runner, at its gate
            other = launch(tmp_path / "other" / "state", config=config, env=env)
            try:
                first = _started(other, github, waited)  # the other's runner takes it
                _at_gate(other, key, first)
            finally:
                other.kill()  # its run is an orphan: its end frees no runner
            full = deliver(keeper, "issues", labelled(filling)).json()
            assert full["status"] == "started"  # queued: no runner is free, the queue full
            asked = deliver(keeper, "issue_comment", commented(waited, "@golem once more"))
            assert (asked.json()["status"], asked.json()["run_id"]) == ("queued", first)
            ended = subprocess.run(  # where its server died: `golem runs cancel` ends it
                [sys.executable, "-m", "golem", "runs", "cancel", first],
                env=other.env, cwd=other.state_dir.parent, capture_output=True, check=False,
            )  # fmt: skip
            assert ended.returncode == 0, ended.stderr
            with keeper.client(key) as client:
                assert client.get(f"/v1/runs/{first}").json()["status"] == "cancelled"
            assert _issue_runs(keeper, key, waited) == [first]  # the queue is full still
            assert run_to_end(keeper, key, held, "cancel")["status"] == "cancelled"
            second = eventually(
                lambda: next((r for r in _issue_runs(keeper, key, waited) if r != first), None),
                "the pending request's run, once the queue had room",
            )
            found = comments_when(github, waited, acknowledged(second))
            assert any(f"while run `{first}` ran" in c["body"] for c in found)
            for run_id in (second, full["run_id"]):
                with keeper.client(key) as client:
                    client.post(f"/v1/runs/{run_id}/cancel")
        finally:
            keeper.stop()


def _started(served: Served, github: GitHub, repo: str) -> str:
    """A labelled issue's run, acknowledged (so that any server sees it in progress)."""
    answer = deliver(served, "issues", labelled(repo)).json()
    assert answer["status"] == "started", answer
    run_id: str = answer["run_id"]
    comments_when(github, repo, acknowledged(run_id))
    return run_id


def _at_gate(served: Served, key: str, run_id: str) -> None:
    """Return once ``run_id`` waits at its gate (followed through its events)."""
    with (
        served.client(key) as client,
        connect_sse(client, "GET", f"/v1/runs/{run_id}/events") as events,
    ):
        for event in events.iter_sse():
            if event.event == "gate_wait":
                return
    raise AssertionError(f"the events of {run_id} ended before its gate")


def _issue_runs(served: Served, key: str, repo: str) -> list[str]:
    return [r["id"] for r in reversed(runs_of(served, key, repo))]
