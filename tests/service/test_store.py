"""golem's SQL store on a real SQLite file: runs, their events, gate decisions and cancel
requests from other processes, and the local forge's pull requests."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from golem.blueprint.events import NodeStarted, RunNote
from golem.blueprint.state import GateState, RunRequest, RunState
from golem.core import load_config
from golem.forge import CheckResult, ForgeComment, PullRequest
from golem.service.store import SqlStore, StoreError, database_url


def new_run(run_id: str = "run-000000000001") -> RunState:
    return RunState(
        id=run_id,
        request=RunRequest(repo="/srv/repo", task="fix it"),
        blueprint="minion",
        blueprint_source="name: minion\n",
    )


@pytest.fixture
def store(tmp_path: Path) -> SqlStore:
    return SqlStore(f"sqlite:///{tmp_path / 'golem.db'}")


def test_a_run_round_trips_and_lists_newest_first(store: SqlStore) -> None:
    first, second = new_run("run-1"), new_run("run-2")
    second.created = first.created + 1
    store.create_run(first)
    store.create_run(second)
    first.status, first.current, first.cost_usd = "running", "implement", 0.25
    store.save_run(first)
    loaded = store.load_run("run-1")
    assert loaded is not None
    assert (loaded.status, loaded.current, loaded.cost_usd) == ("running", "implement", 0.25)
    assert [r.id for r in store.list_runs()] == ["run-2", "run-1"]
    assert store.load_run("run-nope") is None


def _cancel_from_another_process(url: str) -> None:
    SqlStore(url).request_cancel("run-1")


def test_a_cancel_from_another_process_survives_the_runners_saves(
    store: SqlStore, tmp_path: Path
) -> None:
    state = new_run("run-1")
    store.create_run(state)
    process = multiprocessing.get_context("spawn").Process(
        target=_cancel_from_another_process, args=(store.url,)
    )
    process.start()
    process.join(60)
    assert process.exitcode == 0
    state.status = "running"
    store.save_run(state)  # the runner's own save does not undo the request
    loaded = store.load_run("run-1")
    assert loaded is not None
    assert loaded.cancel_requested


def test_a_gate_decision_reaches_the_waiting_run_once(store: SqlStore) -> None:
    state = new_run("run-1")
    state.gate = GateState(node="approve", message="ok?", asked=1.0, deadline=None)
    store.create_run(state)
    store.decide_gate("run-1", "approved")
    loaded = store.load_run("run-1")
    assert loaded is not None
    assert loaded.gate is not None
    assert (loaded.gate.decision, loaded.gate.decided_by) == ("approved", "person")
    store.clear_gate("run-1")
    again = store.load_run("run-1")
    assert again is not None
    assert again.gate is not None
    assert again.gate.decision is None


def test_events_are_numbered_per_run_and_read_from_an_offset(store: SqlStore) -> None:
    for run_id in ("run-1", "run-2"):
        store.create_run(new_run(run_id))
    assert store.append_event("run-1", RunNote(run_id="run-1", message="one")) == 1
    assert store.append_event("run-2", RunNote(run_id="run-2", message="other")) == 1
    assert store.append_event("run-1", NodeStarted(run_id="run-1", node="x", kind="box")) == 2
    events = store.events("run-1")
    assert [(seq, event.type) for seq, event in events] == [(1, "note"), (2, "node_start")]
    assert [seq for seq, _ in store.events("run-1", after=1)] == [2]


def test_pull_requests_are_numbered_per_repository(store: SqlStore) -> None:
    def pr(repo: str) -> PullRequest:
        return PullRequest(
            provider="local", number=0, url=f"golem://local/{repo}/pulls/{{number}}", repo=repo,
            base="main", head="golem/x", title="fix: x", body="b", diff="+x",
            checks=[CheckResult(name="test", command="t", passed=True, exit_code=0, duration=1)],
        )  # fmt: skip

    one = store.add_pull_request(pr("a"))
    two = store.add_pull_request(pr("a"))
    other = store.add_pull_request(pr("b"))
    assert (one.number, two.number, other.number) == (1, 2, 1)
    assert two.url == "golem://local/a/pulls/2"
    assert [p.number for p in store.list_pull_requests("a")] == [2, 1]
    found = store.get_pull_request("a", 1)
    assert found is not None
    assert found.checks[0].passed
    assert store.get_pull_request("a", 9) is None


def test_comments_are_kept_per_target_oldest_first(store: SqlStore) -> None:
    store.add_comment(ForgeComment(target="a#1", body="first", created=1.0))
    store.add_comment(ForgeComment(target="b#2", body="elsewhere", created=2.0))
    store.add_comment(ForgeComment(target="a#1", body="second", created=3.0))
    assert [c.body for c in store.list_comments("a#1")] == ["first", "second"]
    assert len(store.list_comments()) == 3


def test_opening_an_existing_database_again_keeps_its_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'golem.db'}"
    SqlStore(url).create_run(new_run("run-1"))
    assert SqlStore(url).load_run("run-1") is not None  # migrations ran once, data kept


def test_the_default_database_is_a_file_in_the_state_dir(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    assert database_url(config) == f"sqlite:///{tmp_path / 'state' / 'golem.db'}"


def test_an_unusable_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot prepare database"):
        SqlStore(f"sqlite:///{tmp_path / 'missing-dir' / 'golem.db'}")
