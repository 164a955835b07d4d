"""The live progress of a run names why a check failed (a kill for memory, a timeout),
not only its exit code; its report says why the run is not verified."""

from __future__ import annotations

import io

from golem.blueprint import RunState
from golem.blueprint.events import CheckFinished
from golem.cli.run_progress import RunProgress, print_report
from golem.core.console import GolemConsole
from tests.blueprint.outcomes import OOM, result, with_outcomes
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
