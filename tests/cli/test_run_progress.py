"""The live progress of a run names why a check failed (a kill for memory, a timeout),
not only its exit code, and prints what it did not write as text; its report says why
the run is not verified."""

from __future__ import annotations

import io

from golem.agent.events import ExternalOutput, ToolStarted
from golem.agent.messages import ToolCall
from golem.blueprint import RunState
from golem.blueprint.events import (
    AgentStep,
    CheckFinished,
    CheckOutput,
    GateDecided,
    GateWaiting,
    NodeFinished,
    NodeStarted,
    RunEvent,
    RunNote,
    RunPaused,
    RunStarted,
)
from golem.cli.run_progress import RunProgress, print_report
from golem.core.console import GolemConsole
from tests.blueprint.outcomes import OOM, result, with_outcomes
from tests.cli.hostile import HOSTILE, SHOWN, foreign, shown_as_text
from tests.cli.stored_runs import new_run


def console() -> tuple[GolemConsole, io.StringIO]:
    out = io.StringIO()
    return GolemConsole(file=out, width=250, color_system=None), out


def live(event: CheckFinished) -> str:
    """What the live progress prints for ``event``, spaces squeezed."""
    terminal, out = console()
    RunProgress(terminal)(event)
    return " ".join(out.getvalue().split())


def report(state: RunState) -> str:
    """The run's report, spaces squeezed."""
    terminal, out = console()
    print_report(terminal, state)
    return " ".join(out.getvalue().split())


def test_a_failed_setup_line_gives_its_reason() -> None:
    setup = result("setup", "npm ci", 137, reason=OOM, output_tail="Killed\n")
    line = live(CheckFinished(run_id="r", node="setup", round=0, check=setup))
    assert f"✗ setup npm ci 1.5s failed ({OOM}): Killed" in line


def test_a_timed_out_check_says_so() -> None:
    test = result("test", "pytest", -9, timed_out=True)
    line = live(CheckFinished(run_id="r", node="verify", round=1, check=test))
    assert "failed (timed out)" in line
    assert "exit -9" not in line


def test_the_report_of_an_unverified_run_says_why() -> None:
    text = report(with_outcomes(new_run("r", status="unverified")))
    assert "unverified · r" in text
    assert "not verified: no check ran on the change" in text


def test_the_live_progress_prints_every_value_a_repository_or_a_box_gave_as_text() -> None:
    """`golem run`'s lines: a blueprint's node names, a check's name, command and output,
    a gate's message, an agent's tool calls and the box's lines, shown as text on a
    terminal that golem colours."""
    out = io.StringIO()
    progress = RunProgress(GolemConsole(file=out, width=400, force_terminal=True))
    check = result(HOSTILE, HOSTILE, 1, output_tail=HOSTILE)
    call = ToolCall(id="1", name=HOSTILE, arguments={"command": HOSTILE})
    events: list[RunEvent] = [
        RunStarted(run_id="r", blueprint=HOSTILE),
        NodeStarted(run_id="r", node=HOSTILE, kind=HOSTILE),
        CheckOutput(
            run_id="r",
            node="n",
            round=0,
            check=HOSTILE,
            command=HOSTILE,
            stream="stdout",
            text=HOSTILE + "\n",
        ),
        CheckFinished(run_id="r", node="n", round=0, check=check),
        AgentStep(run_id="r", node="n", event=ToolStarted(call=call)),
        AgentStep(run_id="r", node="n", event=ExternalOutput(stream="stdout", line=HOSTILE)),
        GateWaiting(run_id="r", node="n", message=HOSTILE, deadline=None),
        GateDecided(run_id="r", node="n", decision="approved", decided_by=HOSTILE),
        RunNote(run_id="r", message=HOSTILE),
        RunPaused(run_id="r", node=HOSTILE, reason=HOSTILE, resume_at=0.0),
        NodeFinished(run_id="r", node=HOSTILE, outcome="failure", detail=HOSTILE, duration=1.0),
    ]
    for event in events:
        progress(event)
    printed = out.getvalue()
    assert "\x1b[1m" in printed  # golem's own bold
    assert foreign(printed) == []
    assert shown_as_text(printed).count(SHOWN) == 16
