"""`golem runs cancel|approve|reject` on runs in the local store: the same run control as
the API's (golem.blueprint.control), so a queued run cancelled here ends with its run_end
too, and a gate is answered once."""

from __future__ import annotations

from golem.blueprint.state import AttemptRecord, GateState
from tests.cli.invoke import golem
from tests.cli.stored_runs import keep, kept, new_run


def test_cancelling_a_queued_run_ends_it_with_its_run_end(
    golem_env: dict[str, str],
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
    golem_env: dict[str, str],
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
    golem_env: dict[str, str],
) -> None:
    missing = golem(golem_env, "runs", "approve", "run-nope")
    assert missing.returncode == 2
    assert b"no run 'run-nope'" in missing.stderr


def test_runs_show_lists_a_runs_attempts_with_their_verdicts_as_text(
    golem_env: dict[str, str],
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
