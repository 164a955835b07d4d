"""Run control (golem.blueprint.control), as the CLI and the API call it, on the in-memory
store: a queued run is cancelled with its run_end; a running run is asked to stop; an ended
run and an answered gate are conflicts; another tenant's run is not found."""

from __future__ import annotations

import pytest

from golem.blueprint import RunBook, RunRequest, RunState
from golem.blueprint.control import cancel_run, decide_gate
from golem.blueprint.state import GateState
from golem.core.errors import RunConflict, RunNotFound
from golem.store import MemoryStore


def new_run(run_id: str, **fields: object) -> RunState:
    request = RunRequest(repo="/srv/repo", task="fix it")
    return RunState.model_validate(
        {"id": run_id, "request": request, "blueprint": "minion", "blueprint_source": "",
         **fields}
    )  # fmt: skip


@pytest.fixture
def book() -> RunBook:
    return RunBook(MemoryStore(tenant="acme"))


async def test_a_queued_run_is_cancelled_with_its_run_end(book: RunBook) -> None:
    await book.create(new_run("run-1"))
    cancelled = await cancel_run(book, "run-1")
    assert (cancelled.status, cancelled.error) == ("cancelled", "cancelled before it started")
    [(_, end)] = await book.events("run-1")
    assert (end.type, getattr(end, "status", None)) == ("run_end", "cancelled")
    with pytest.raises(RunConflict, match="already ended"):
        await cancel_run(book, "run-1")


async def test_a_running_run_is_asked_to_stop_and_left_to_its_runner(book: RunBook) -> None:
    await book.create(new_run("run-1", status="running", owner_pid=1))
    asked = await cancel_run(book, "run-1")  # no engine: whoever runs it acts on the request
    assert (asked.status, asked.cancel_requested) == ("running", True)
    assert await book.events("run-1") == []


async def test_a_gate_takes_the_first_answer_only(book: RunBook) -> None:
    gate = GateState(node="approve", message="ok?", asked=1.0, deadline=None)
    await book.create(new_run("run-1", status="waiting", gate=gate))
    answered = await decide_gate(book, "run-1", "rejected")
    assert answered.gate is not None
    assert (answered.gate.decision, answered.gate.decided_by) == ("rejected", "person")
    with pytest.raises(RunConflict, match="answered already"):
        await decide_gate(book, "run-1", "approved")
    await book.create(new_run("run-2", status="running"))
    with pytest.raises(RunConflict, match="not waiting at a gate"):
        await decide_gate(book, "run-2", "approved")


async def test_another_tenants_run_is_not_found(book: RunBook) -> None:
    await book.create(new_run("run-1"))
    other = book.for_tenant("other")
    with pytest.raises(RunNotFound):
        await cancel_run(other, "run-1")
    with pytest.raises(RunNotFound):
        await decide_gate(other, "run-1", "approved")
    kept = await book.load("run-1")
    assert kept is not None
    assert (kept.status, kept.cancel_requested) == ("queued", False)
