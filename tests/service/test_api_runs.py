"""Runs over HTTP against a real server on loopback: a run to its pull request with its
events streamed live; a gate answered once; the queue full (429 or a wait, as configured);
cancelling queued and running runs; a SIGKILL of the server mid-run, then a restart that
resumes the run, loses nothing and leaves no box."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.blueprint.repos import EXAMPLES, branch_commits
from tests.service.api_runs import (  # noqa: F401 - its fixtures
    FIX,
    SLOW,
    TASK,
    agent_working,
    boxes,
    follow,
    remote,
    submit,
)
from tests.service.served import Served, launch, serving

pytestmark = pytest.mark.bwrap

GATED = Path(__file__).with_name("dashboard_gate.yaml")


def orphans(served: Served) -> list[dict[str, object]]:
    """Boxes whose owner process is gone (a live server keeps warm ones in its pool)."""
    return [box for box in boxes(served) if not box["owner_alive"]]


@pytest.fixture
def trusted(served: Served) -> Iterator[httpx.Client]:
    with served.client(served.tenant_key("acme", "trusted")) as client:
        yield client


def test_a_run_over_http_streams_its_events_and_ends_in_a_pull_request(
    trusted: httpx.Client,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    submitted = submit(trusted, remote)
    assert submitted.status_code == 202, submitted.text
    run_id = submitted.json()["id"]
    assert submitted.json()["status"] == "queued"

    events = follow(trusted, run_id)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "run_start"
    assert kinds[-1] == "run_end"
    assert "check" in kinds
    assert events[-1][1]["status"] == "succeeded"
    printed = [data for kind, data in events[: kinds.index("check")] if kind == "check_output"]
    assert {(data["node"], data["check"]) for data in printed} == {("verify", "test")}
    assert "test_add (test_calculator." in "".join(str(data["text"]) for data in printed)

    run = trusted.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "succeeded"
    assert run["pr"]["number"] == 1
    pr = trusted.get("/v1/prs/1", params={"repo": str(remote)}).json()
    assert "+    return a + b" in pr["diff"]
    assert [p["number"] for p in trusted.get("/v1/prs").json()] == [1]
    later = follow(trusted, run_id, after=len(events) - 1)
    assert [kind for kind, _ in later] == ["run_end"]  # Last-Event-ID resumes the stream
    after_end = {"Last-Event-ID": str(len(events))}  # a reconnect after the run's end
    with trusted.stream("GET", f"/v1/runs/{run_id}/events", headers=after_end, timeout=10) as over:
        assert [line for line in over.iter_lines() if line] == []  # closed, not kept waiting


def test_a_gate_is_answered_over_http_once(trusted: httpx.Client, remote: Path) -> None:  # noqa: F811 - fixtures, imported above
    run_id = submit(trusted, remote, blueprint=str(GATED)).json()["id"]
    follow(trusted, run_id, until=lambda event: event[0] == "gate_wait")
    early = trusted.post(f"/v1/runs/{run_id}/gate", json={"decision": "maybe"})
    assert early.status_code == 422
    rejected = trusted.post(f"/v1/runs/{run_id}/gate", json={"decision": "rejected"})
    assert rejected.status_code == 200, rejected.text
    again = trusted.post(f"/v1/runs/{run_id}/gate", json={"decision": "approved"})
    assert again.status_code == 409
    # The runner is woken at once: the second answer finds the gate answered, or passed.
    why = again.json()["detail"]
    assert "answered already" in why or "not waiting at a gate (running)" in why, why
    events = follow(trusted, run_id)
    assert events[-1][1]["status"] == "escalated"
    assert trusted.get(f"/v1/runs/{run_id}").json()["pr"]["draft"] is True  # escalated


def test_a_user_key_may_not_name_files_on_the_server(served: Served, remote: Path) -> None:  # noqa: F811 - fixtures, imported above
    with served.client(served.tenant_key("plain")) as user:
        refused = submit(user, remote)
        assert refused.status_code == 403
        detail = refused.json()["detail"]
        assert "server.policies.user.server_files" in detail
        assert str(remote) in detail
        assert "scripted:" in detail
        assert user.get("/v1/runs").json() == []


def test_bad_runs_are_refused_with_what_to_change(trusted: httpx.Client, remote: Path) -> None:  # noqa: F811 - fixtures, imported above
    no_task = trusted.post("/v1/runs", json={"repo": str(remote)})
    assert no_task.status_code == 422
    assert "task or an issue" in no_task.json()["detail"]
    no_blueprint = submit(trusted, remote, blueprint="/nope.yaml")
    assert no_blueprint.status_code == 422
    assert "no blueprint" in no_blueprint.json()["detail"]
    run = {"repo": str(remote), "task": TASK, "model": FIX}
    too_many = trusted.post("/v1/runs", json={**run, "attempts": 5})
    assert too_many.status_code == 422
    assert "at most 4 ([engine] max_attempts)" in too_many.json()["detail"]
    assert trusted.post("/v1/runs", json={**run, "attempts": 0}).status_code == 422
    unknown = trusted.post("/v1/runs", json={"repo": "x", "task": "t", "sudo": True})
    assert unknown.status_code == 422
    assert "sudo" in unknown.json()["detail"]
    assert trusted.get("/v1/runs/run-nope").status_code == 404


ONE_RUNNER = """
[server]
max_runs = 1
max_queued = 1
overflow = "{overflow}"
retry_after = 9
"""


def test_a_full_queue_answers_429_with_retry_after(
    tmp_path_factory: pytest.TempPathFactory,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    state = tmp_path_factory.mktemp("reject") / "state"
    with (
        serving(state, config=ONE_RUNNER.format(overflow="reject")) as server,
        server.client(server.key("acme", "trusted")) as client,
    ):
        slow = submit(client, remote, model=f"scripted:{SLOW}").json()["id"]
        full = submit(client, remote)
        assert full.status_code == 429
        assert full.headers["retry-after"] == "9"
        assert "server.max_runs" in full.json()["detail"]
        assert client.post(f"/v1/runs/{slow}/cancel").status_code == 200
        assert follow(client, slow)[-1][1]["status"] == "cancelled"
        assert orphans(server) == []
    assert boxes(server) == []


def test_with_overflow_queue_runs_wait_their_turn_until_the_queue_is_full(
    tmp_path_factory: pytest.TempPathFactory,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    state = tmp_path_factory.mktemp("queue") / "state"
    with (
        serving(state, config=ONE_RUNNER.format(overflow="queue")) as server,
        server.client(server.key("acme", "trusted")) as client,
    ):
        slow = submit(client, remote, model=f"scripted:{SLOW}").json()["id"]
        follow(client, slow, until=agent_working)  # the one runner is busy now
        waiting = submit(client, remote)
        assert waiting.status_code == 202
        assert client.get(f"/v1/runs/{waiting.json()['id']}").json()["status"] == "queued"
        full = submit(client, remote)
        assert full.status_code == 429
        assert "server.max_queued" in full.json()["detail"]

        cancelled = client.post(f"/v1/runs/{waiting.json()['id']}/cancel").json()
        assert cancelled["status"] == "cancelled"  # it never started
        assert client.post(f"/v1/runs/{slow}/cancel").status_code == 200
        assert follow(client, slow)[-1][1]["status"] == "cancelled"
        ended = client.post(f"/v1/runs/{slow}/cancel")
        assert ended.status_code == 409
        assert orphans(server) == []
    assert boxes(server) == []  # the stopped server took its warm boxes with it


def test_a_killed_server_resumes_its_run_after_a_restart_with_no_box_left(
    tmp_path: Path,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    script = tmp_path / "model.yaml"
    script.write_text(SLOW.read_text())
    state = tmp_path / "state"
    first = launch(state)
    with first.client(first.key("acme", "trusted")) as client:
        run_id = submit(client, remote, model=f"scripted:{script}").json()["id"]
        follow(client, run_id, until=agent_working)
    first.kill()
    assert orphans(first) != []  # the dead server's box is still there

    script.write_text((EXAMPLES / "calculator-fix.yaml").read_text())  # the retry succeeds
    second = launch(state, admin_key=first.admin_key)
    try:
        with second.client(second.key("acme", "trusted")) as client:
            events = follow(client, run_id)
            starts = [data for kind, data in events if kind == "run_start"]
            assert [s["resumed"] for s in starts] == [False, True]
            run = client.get(f"/v1/runs/{run_id}").json()
            assert run["status"] == "succeeded", run["error"]
            assert run["pr"]["number"] == 1
            assert len(client.get("/v1/runs").json()) == 1
        assert len(branch_commits(remote, run["branch"])) == 1
        assert orphans(second) == []
    finally:
        second.stop()
    assert boxes(second) == []


def test_a_server_on_postgresql_runs_to_a_pull_request(
    tmp_path: Path,
    remote: Path,  # noqa: F811 - fixtures, imported above
    postgres_url: str,
) -> None:
    with (
        serving(tmp_path / "state", env={"GOLEM_DATABASE_URL": postgres_url}) as server,
        server.client(server.key("acme", "trusted")) as client,
    ):
        run_id = submit(client, remote).json()["id"]
        assert follow(client, run_id)[-1][1]["status"] == "succeeded"
        assert [p["number"] for p in client.get("/v1/prs").json()] == [1]
    assert not (tmp_path / "state" / "golem.db").exists()  # everything went to PostgreSQL


RETAINING = """
[server.retention]
days = 0.000001    # 86 ms: a run is old as soon as it has ended
interval = 0.05
"""


def test_the_server_prunes_what_old_runs_left_behind(
    tmp_path_factory: pytest.TempPathFactory,
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    state = tmp_path_factory.mktemp("retention") / "state"
    with (
        serving(state, config=RETAINING) as server,
        server.client(server.key("acme", "trusted")) as client,
    ):
        run_id = submit(client, remote).json()["id"]
        assert follow(client, run_id)[-1][1]["status"] == "succeeded"
        archive = str(state / "archive" / f"{run_id}.tar.gz")
        deadline = time.monotonic() + 60
        while (run := client.get(f"/v1/runs/{run_id}").json())["trajectories"] != [archive]:
            assert time.monotonic() < deadline, f"never pruned: {run['trajectories']}"
            time.sleep(0.05)  # a poll of the server's state, not a wait for a result
        assert run["status"] == "succeeded"  # still listed, with its outcome
        assert not (state / "runs" / run_id).exists()
        # its events are gone but how it ended
        assert [kind for kind, _ in follow(client, run_id)] == ["run_end"]
        assert Path(archive).is_file()
