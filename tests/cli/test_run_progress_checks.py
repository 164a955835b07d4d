"""``golem run``'s line for a failed check says why in a few words: the reason it was
stopped (the memory limit, not just "exit 137"), else its first failing test."""

from __future__ import annotations

from rich.console import Console

from golem.blueprint.events import CheckFinished
from golem.cli.run_progress import RunProgress
from golem.forge import CheckResult, TestFailure


def shown(check: CheckResult) -> str:
    console = Console(record=True, width=200, color_system=None)
    RunProgress(console)(CheckFinished(run_id="run-1", node="verify", round=0, check=check))
    return console.export_text()


def test_a_check_killed_by_the_memory_limit_shows_the_reason() -> None:
    reason = "killed by the box's memory limit (2g): raise the box's memory"
    check = CheckResult(
        name="test",
        command="npm test",
        passed=False,
        exit_code=137,
        duration=3.0,
        output_tail="[stderr]\nKilled",
        reason=reason,
    )
    assert f"exit 137: {reason}" in shown(check)


def test_a_failing_test_run_shows_its_first_failing_test_and_how_many_more() -> None:
    failures = [
        TestFailure(name="tests/test_calc.py::test_add", message="assert -1 == 5\n+ where"),
        TestFailure(name="tests/test_calc.py::test_sub", message="assert 3 == 1"),
    ]
    check = CheckResult(
        name="test",
        command="pytest",
        passed=False,
        exit_code=1,
        duration=1.0,
        output_tail="Failing tests (2):\n...",
        failures=failures,
    )
    assert "exit 1: tests/test_calc.py::test_add (and 1 more): assert -1 == 5" in shown(check)
