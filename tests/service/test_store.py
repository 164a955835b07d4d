"""golem's SQL store on a real SQLite file and a real PostgreSQL database (every test that
takes ``store`` or ``db_url`` runs on both): runs, their events, gate decisions and cancel
requests from other processes, the local forge's pull requests, and tenants."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from golem.blueprint.events import NodeStarted, RunNote
from golem.blueprint.state import GateState
from golem.core import load_config
from golem.core.errors import RunNotFound, StoreError
from golem.forge import CheckResult, ForgeComment, PullRequest
from golem.service.store import SqlStore, database_url
from tests.service.runs import new_run


def pull_request(repo: str) -> PullRequest:
    return PullRequest(
        provider="local", number=0, url=f"golem://local/{repo}/pulls/{{number}}", repo=repo,
        base="main", head="golem/x", title="fix: x", body="b", diff="+x",
        checks=[CheckResult(name="test", command="t", passed=True, exit_code=0, duration=1)],
    )  # fmt: skip


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


def test_floats_booleans_text_and_large_states_round_trip_exactly(store: SqlStore) -> None:
    state = new_run("run-1", created=1_700_000_000.123456)
    state.cost_usd = 0.1 + 0.2
    state.context = "naïve café ✓ 🦀 \x00 end\n" * 200_000  # 5 MB, with a NUL
    store.create_run(state)
    store.request_cancel("run-1")
    loaded = store.load_run("run-1")
    assert loaded is not None
    assert loaded.cost_usd == 0.1 + 0.2
    assert loaded.created == 1_700_000_000.123456
    assert loaded.context == state.context
    assert loaded.cancel_requested is True
    assert store.list_runs()[0].cancel_requested is True


def _cancel_from_another_process(url: str) -> None:
    SqlStore(url).request_cancel("run-1")


def test_a_cancel_from_another_process_survives_the_runners_saves(store: SqlStore) -> None:
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


def test_an_event_for_an_unknown_run_is_refused(store: SqlStore) -> None:
    with pytest.raises(RunNotFound, match="no run 'run-nope'"):
        store.append_event("run-nope", RunNote(run_id="run-nope", message="lost"))


def test_pull_requests_are_numbered_per_repository(store: SqlStore) -> None:
    one = store.add_pull_request(pull_request("a"))
    two = store.add_pull_request(pull_request("a"))
    other = store.add_pull_request(pull_request("b"))
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
    store.add_comment(ForgeComment(target="a#1", body="second ✓ \x00", created=3.0))
    assert [c.body for c in store.list_comments("a#1")] == ["first", "second ✓ \ufffd"]
    assert len(store.list_comments()) == 3


def test_a_tenant_sees_and_changes_only_its_own_records(db_url: str) -> None:
    acme = SqlStore(db_url, tenant="acme")
    other = SqlStore(db_url, tenant="other")
    everyone = SqlStore(db_url, tenant=None)
    acme.create_run(new_run("run-a"))
    acme.append_event("run-a", RunNote(run_id="run-a", message="acme's"))
    acme.add_pull_request(pull_request("repo"))
    acme.add_comment(ForgeComment(target="repo#1", body="acme's"))
    other.create_run(new_run("run-o"))

    assert other.load_run("run-a") is None
    assert [r.id for r in other.list_runs()] == ["run-o"]
    assert other.events("run-a") == []
    assert other.list_pull_requests() == []
    assert other.get_pull_request("repo", 1) is None
    assert other.list_comments() == []
    assert other.run_tenant("run-a") is None
    other.request_cancel("run-a")
    other.decide_gate("run-a", "rejected")
    stolen = new_run("run-a")
    stolen.status = "failed"
    other.save_run(stolen)
    with pytest.raises(RunNotFound):
        other.append_event("run-a", RunNote(run_id="run-a", message="other's"))

    mine = acme.load_run("run-a")
    assert mine is not None
    assert (mine.status, mine.cancel_requested) == ("queued", False)
    assert [seq for seq, _ in acme.events("run-a")] == [1]
    assert {r.id for r in everyone.list_runs()} == {"run-a", "run-o"}
    assert everyone.run_tenant("run-a") == "acme"
    assert [r.id for r in everyone.for_tenant("other").list_runs()] == ["run-o"]
    for store in (acme, other, everyone):
        store.close()


def test_a_store_for_all_tenants_does_not_create_records(db_url: str) -> None:
    everyone = SqlStore(db_url, tenant=None)
    with pytest.raises(StoreError, match="for_tenant"):
        everyone.create_run(new_run("run-1"))
    with pytest.raises(StoreError, match="for_tenant"):
        everyone.add_pull_request(pull_request("a"))
    everyone.for_tenant("acme").create_run(new_run("run-1"))
    assert everyone.run_tenant("run-1") == "acme"
    everyone.close()


def test_opening_an_existing_database_again_keeps_its_data(db_url: str) -> None:
    first = SqlStore(db_url)
    first.create_run(new_run("run-1"))
    first.close()
    again = SqlStore(db_url)
    assert again.load_run("run-1") is not None  # migrations ran once, data kept
    again.close()


def test_the_default_database_is_a_file_in_the_state_dir(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    assert database_url(config) == f"sqlite:///{tmp_path / 'state' / 'golem.db'}"


def test_an_unusable_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot prepare database"):
        SqlStore(f"sqlite:///{tmp_path / 'missing-dir' / 'golem.db'}")


def test_an_unreachable_postgresql_is_a_clear_error_without_its_password() -> None:
    url = "postgresql+psycopg://golem:s3cret@127.0.0.1:1/golem?connect_timeout=5"
    with pytest.raises(StoreError, match="cannot prepare database") as caught:
        SqlStore(url)
    assert "s3cret" not in str(caught.value)
    assert "127.0.0.1:1" in str(caught.value)
