"""What the tests' runs say of a task: at ``make``, which tests fail before the fix and pass
after it (FAIL_TO_PASS) and which pass both times (PASS_TO_PASS); at ``run``, whether a
tree resolves the task: every FAIL_TO_PASS and PASS_TO_PASS test passes (as SWE-bench
judges: a test that did not run did not pass), and every command that must pass whole does.

A test passes when an output names it passing; or, when no output names it at all, every
command passed whole and one of them names no passing test (such as jest without
``--verbose``: passing whole, it vouches for all of its tests at once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from golem.eval.tasks import EvalTask

__all__ = [
    "CommandOutcome",
    "Derived",
    "Score",
    "TestRun",
    "TestStatus",
    "derive",
    "score",
    "status_of",
]

TestStatus = Literal["passed", "failed", "missing"]
_UNITTEST_NAME = re.compile(r"^(\w+) \(([\w.]+)\)$")  # SWE-bench's "test_x (module.Class)"
SHOWN = 5


class CommandOutcome(BaseModel):
    """One test command as it ran: whether it passed whole, and each test it names."""

    command: str
    passed: bool
    exit_code: int
    reason: str | None = None
    tests_passed: list[str] = Field(default_factory=list)
    tests_failed: list[str] = Field(default_factory=list)
    names_passes: bool = Field(description="Whether its output names passing tests at all.")
    complete: bool = Field(True, description="Whether its whole output was read.")


class TestRun(BaseModel):
    """A tree's tests as run: ``ran`` when the environment could be had (installed, set
    up) and every command ran; else ``why`` not."""

    __test__ = False  # not a pytest class

    ran: bool
    why: str | None = None
    commands: list[CommandOutcome] = Field(default_factory=list)
    run_id: str = ""
    seconds: float = 0.0


def canonical(name: str) -> str:
    """A test's name as golem's parsers name it (SWE-bench writes unittest's tests as
    ``test_x (module.Class)``, golem as ``module.Class.test_x``)."""
    if match := _UNITTEST_NAME.match(name):
        method, where = match.groups()
        return where if where.endswith(f".{method}") else f"{where}.{method}"
    return name


def status_of(run: TestRun, name: str) -> TestStatus:
    """How test ``name`` fared in ``run``."""
    wanted = canonical(name)
    if any(wanted in command.tests_failed for command in run.commands):
        return "failed"
    if any(wanted in command.tests_passed for command in run.commands):
        return "passed"
    whole = run.ran and bool(run.commands) and all(c.passed for c in run.commands)
    if whole and not all(command.names_passes for command in run.commands):
        return "passed"  # a runner that names no passing test may have run it: it passed
    return "missing"


def _named(run: TestRun) -> set[str]:
    return {name for c in run.commands for name in (*c.tests_passed, *c.tests_failed)}


@dataclass(frozen=True)
class Derived:
    """A change's tests as its two runs tell them; ``why_not`` when it makes no task."""

    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    must_pass: list[str] = field(default_factory=list)
    why_not: str | None = None


def derive(before: TestRun, after: TestRun) -> Derived:
    """The tests that fail (or do not run) with the tests alone and pass with the fix too,
    and those that pass both times; why not a task when none fails then passes."""
    for run, when in ((before, "before"), (after, "after")):
        if not run.ran:
            return Derived(why_not=f"its tests could not run {when} the fix: {run.why}")
    names = _named(before) | _named(after)
    fail_to_pass = sorted(
        n for n in names if status_of(after, n) == "passed" and status_of(before, n) != "passed"
    )
    pass_to_pass = sorted(
        n for n in names if status_of(before, n) == "passed" and status_of(after, n) == "passed"
    )
    must_pass = [c.command for c in after.commands if c.passed and not c.names_passes]
    if fail_to_pass:
        return Derived(fail_to_pass, pass_to_pass, must_pass)
    still = sorted(n for n in names if status_of(after, n) != "passed")
    if still:
        return Derived(why_not=f"with the fix, tests still fail: {_few(still)}")
    return Derived(why_not="no test fails before the fix: its tests pass without it too")


class Score(BaseModel):
    """A tree judged by the hidden tests: each FAIL_TO_PASS and PASS_TO_PASS test's status,
    each command that must pass whole, and whether the task is resolved."""

    resolved: bool
    fail_to_pass: dict[str, TestStatus] = Field(default_factory=dict)
    pass_to_pass: dict[str, TestStatus] = Field(default_factory=dict)
    must_pass: dict[str, bool] = Field(default_factory=dict)

    def failing(self) -> list[str]:
        """The tests (and commands) that kept it from being resolved."""
        tests = {**self.fail_to_pass, **self.pass_to_pass}
        return [n for n, s in tests.items() if s != "passed"] + [
            c for c, ok in self.must_pass.items() if not ok
        ]


def score(task: EvalTask, run: TestRun) -> Score:
    """Whether ``run`` (the hidden tests on a tree) resolves ``task``."""
    f2p = {name: status_of(run, name) for name in task.FAIL_TO_PASS}
    p2p = {name: status_of(run, name) for name in task.PASS_TO_PASS}
    by_command = {c.command: c.passed for c in run.commands}
    must = {command: by_command.get(command, False) for command in task.golem_must_pass}
    tests = [*f2p.values(), *p2p.values()]
    resolved = all(s == "passed" for s in tests) and all(must.values())
    return Score(resolved=resolved, fail_to_pass=f2p, pass_to_pass=p2p, must_pass=must)


def _few(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more
