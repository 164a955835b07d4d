"""`golem runs cancel|approve|reject` on runs in the local store: the same run control as
the API's (golem.blueprint.control), so a queued run cancelled here ends with its run_end
too, and a gate is answered once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from golem.blueprint import RunBook, RunRequest, RunState
from golem.blueprint.events import RunEvent
from golem.blueprint.state import AttemptRecord, GateState
from golem.store import SqlStore
from tests.cli.test_cli import golem, golem_env  # noqa: F401 - the fixture, shared


def _url(env: dict[str, str]) -> str:
    return f"sqlite:///{Path(env['GOLEM_STATE_DIR']) / 'golem.db'}"


def keep(env: dict[str, str], state: RunState) -> None:
    """Put ``state`` in the store of ``golem``'s state directory."""

    async def create() -> None:
        Path(env["GOLEM_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
        store = await SqlStore.connect(_url(env))
        try:
            await RunBook(store).create(state)
        finally:
            await store.close()

    asyncio.run(create())


def kept(env: dict[str, str], run_id: str) -> tuple[RunState, list[RunEvent]]:
    """The run as the store has it now, and its events."""

    async def read() -> tuple[RunState, list[RunEvent]]:
        store = await SqlStore.connect(_url(env))
        try:
            book = RunBook(store)
            state = await book.load(run_id)
            assert state is not None
            return state, [event for _, event in await book.events(run_id)]
        finally:
            await store.close()

    return asyncio.run(read())


def new_run(run_id: str, **fields: object) -> RunState:
    request = RunRequest(repo="/srv/repo", task="fix it")
    return RunState.model_validate(
        {"id": run_id, "request": request, "blueprint": "minion", "blueprint_source": "",
         **fields}
    )  # fmt: skip


def test_cancelling_a_queued_run_ends_it_with_its_run_end(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
) -> None:
    keep(golem_env, new_run("run-queued"))
    cancelled = golem(golem_env, "runs", "cancel", "run-queued")
    assert cancelled.returncode == 0, cancelled.stderr
    state, events = kept(golem_env, "run-queued")
    assert (state.status, state.cancel_requested) == ("cancelled", True)
    assert [(e.type, getattr(e, "status", None)) for e in events] == [("run_end", "cancelled")]
    again = golem(golem_env, "runs", "cancel", "run-queued")
    assert again.returncode == 2
    assert b"has already ended (cancelled)" in again.stderr


def test_a_gate_is_answered_once_from_the_command_line(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
) -> None:
    gate = GateState(node="approve", message="ship it?", asked=1.0, deadline=None)
    keep(golem_env, new_run("run-waiting", status="waiting", gate=gate))
    approved = golem(golem_env, "runs", "approve", "run-waiting")
    assert approved.returncode == 0, approved.stderr
    assert b"run-waiting: gate approve approved" in approved.stdout
    rejected = golem(golem_env, "runs", "reject", "run-waiting")
    assert rejected.returncode == 2
    assert b"answered already" in rejected.stderr
    state, _ = kept(golem_env, "run-waiting")
    assert state.gate is not None
    assert (state.gate.decision, state.gate.decided_by) == ("approved", "person")


def test_a_run_that_is_not_there_is_a_clear_error(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
) -> None:
    missing = golem(golem_env, "runs", "approve", "run-nope")
    assert missing.returncode == 2
    assert b"no run 'run-nope'" in missing.stderr


def test_runs_show_lists_a_runs_attempts_with_their_verdicts_as_text(
    golem_env: dict[str, str],  # noqa: F811 - the fixture
) -> None:
    attempts = [
        AttemptRecord(number=1, status="won", diff_lines=2, cost_usd=0.25,
                      verdict="verified: 0 of 0 checks passed, 2 lines changed",
                      judged="[red]the\nmodel's words[/red]"),
        AttemptRecord(number=2, status="failed", cost_usd=0.5,
                      verdict="failed: [red]box said\nso[/red]"),
    ]  # fmt: skip
    keep(golem_env, new_run("run-attempts", status="succeeded", attempts=attempts))
    shown = golem(golem_env, "runs", "show", "run-attempts")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.decode().splitlines()
    [won] = [line for line in lines if line.startswith("attempt 1: won")]
    assert "2 lines" in won
    assert won.endswith("changed; the judge: [red]the model's words[/red]")
    [failed] = [line for line in lines if line.startswith("attempt 2: failed")]
    assert failed.endswith("$0.5000  failed: [red]box said so[/red]")  # markup shown as text
