"""A check's result from how its call ended and what it printed: passed or not, the
failure report as its output tail, and the reason when the exit code alone would hide it
(the memory limit, a timeout, silence, a command that could not start, a signal, a test
command that ran no test at all: such a run verifies nothing, whatever its exit code, as
``python3 -m unittest discover`` before 3.12 prints "Ran 0 tests ... OK" and exits 0 on a
repository of pytest-style tests)."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence

from golem.checks.contracts import CheckResult, TestFailure
from golem.checks.reports.report import REPORT_BUDGET, failure_report, output_report
from golem.core.events import ExitEvent
from golem.core.sizes import format_size

__all__ = ["SILENT", "check_result", "failure_reason", "nothing_ran"]

SILENT = "(it printed nothing)"

_NOT_FOUND = 127
_SIGNALLED = 128
_NOT_FOUND_LINE = re.compile(r"^.*(?:command )?not found.*$", re.M | re.I)


def check_result(
    name: str,
    command: str,
    ended: ExitEvent,
    stdout: str,
    stderr: str,
    *,
    memory: int | None,
    junit: Sequence[str] = (),
    timeout: float | None = None,
    idle_timeout: float | None = None,
    start_error: str | None = None,
    complete: bool = True,
    budget: int = REPORT_BUDGET,
) -> CheckResult:
    """The result of check ``name`` (``command``) whose call ended as ``ended`` after
    printing ``stdout`` and ``stderr`` (masked); ``memory`` is its box's limit, the
    timeouts those it ran under, ``start_error`` why it could not start. A check whose
    ``complete`` output says it ran no test fails (a tail cut to its cap may have lost
    what ran, so only a complete one is judged)."""
    passed = ended.exit_code == 0 and not (ended.timed_out or ended.idle_timed_out)
    empty = nothing_ran(stdout, stderr, exit_code=ended.exit_code) if complete else None
    failures: list[TestFailure]
    if passed and empty is None:
        failures, tail, reason = [], output_report(stdout, stderr, budget=budget), None
    elif empty is not None and not (ended.timed_out or ended.idle_timed_out):
        passed = False
        failures, tail = [], output_report(stdout, stderr, budget=budget) or SILENT
        reason = f"ran no tests: {empty}; a check that runs no test verifies nothing"
    else:
        report = failure_report(command, stdout, stderr, junit=junit, budget=budget)
        failures, tail = report.failures, report.text or SILENT
        reason = failure_reason(
            ended,
            stderr,
            memory=memory,
            timeout=timeout,
            idle_timeout=idle_timeout,
            start_error=start_error,
        )
    return CheckResult(
        name=name,
        command=command,
        passed=passed,
        exit_code=ended.exit_code,
        duration=ended.duration,
        output_tail=tail,
        timed_out=ended.timed_out or ended.idle_timed_out,
        reason=reason,
        failures=failures,
    )


def failure_reason(
    ended: ExitEvent,
    stderr: str = "",
    *,
    memory: int | None,
    timeout: float | None = None,
    idle_timeout: float | None = None,
    start_error: str | None = None,
) -> str | None:
    """Why the call failed, when more than its exit code says so; None when its exit
    code is the whole story."""
    if ended.oom_killed:
        return _memory_reason(memory)
    if ended.idle_timed_out:
        silent = _seconds(idle_timeout) if idle_timeout else "too long"
        return f"printed nothing for {silent} and was stopped (the idle timeout)"
    if ended.timed_out:
        return f"timed out after {_seconds(timeout or ended.duration)} and was stopped"
    if start_error:
        return f"could not start: {start_error.strip()}"
    if ended.exit_code == _NOT_FOUND and (missing := _NOT_FOUND_LINE.search(stderr)):
        return f"could not start: {missing.group(0).strip()} (the box does not have it)"
    return _signal_reason(ended)


def _memory_reason(memory: int | None) -> str:
    if memory is None:
        return "killed for lack of memory (the kernel's out-of-memory killer)"
    return (
        f"killed by the box's memory limit ({format_size(memory)}): raise the box's memory "
        "(`memory` under the blueprint's `box`, or engine.defaults.memory) or make the "
        "check use less"
    )


def _signal_reason(ended: ExitEvent) -> str | None:
    number = ended.signal
    if number is None and _SIGNALLED < ended.exit_code <= _SIGNALLED + 64:
        number = ended.exit_code - _SIGNALLED
    try:
        name = signal.Signals(number).name if number is not None else None
    except ValueError:
        return None
    if name is None or (ended.signal is None and name not in _FATAL):
        return None
    return f"killed by {name}"


_FATAL = {"SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGTERM"}


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


_UNITTEST = re.compile(r"^Ran 0 tests in ", re.M)
_SOME_RAN = re.compile(  # any runner of a composite command saying tests ran
    r"^Ran [1-9]\d* tests? in |\b[1-9]\d* passed\b|^ok\s+\S+\s+\d|^running [1-9]\d* tests?$",
    re.M,
)
_PYTEST = re.compile(r"^(?:=+ )?no tests ran\b|^collected 0 items\b", re.M)
_CARGO = re.compile(r"^running (\d+) tests?$", re.M)
_GO_PACKAGE = re.compile(r"^(ok|\?|FAIL|---)\s", re.M)
_GO_NONE = re.compile(r"^(?:\?\s+\S+\s+\[no test files\]|ok\s+\S+\s+\S+\s+\[no tests to run\])$")


def nothing_ran(stdout: str, stderr: str, *, exit_code: int) -> str | None:
    """What in the output says no test ran (None: tests ran, or it does not say)."""
    text = f"{stdout}\n{stderr}"
    if _SOME_RAN.search(text):
        return None
    if _UNITTEST.search(text):
        return "unittest found no test (`Ran 0 tests`)"
    if exit_code == 5 and _PYTEST.search(text):  # pytest's exit code for "collected nothing"
        return "pytest collected no test (`no tests ran`, exit 5)"
    if (counts := _CARGO.findall(text)) and all(count == "0" for count in counts):
        return "cargo test ran no test (every `running N tests` is 0)"
    return _go_nothing(text)


def _go_nothing(text: str) -> str | None:
    packages = [line.strip() for line in text.splitlines() if _GO_PACKAGE.match(line)]
    if packages and all(_GO_NONE.match(line) for line in packages):
        return "go test ran no test (every package: `[no test files]`)"
    return None
