"""A run's state with every kind of result golem shows: a failed setup with its reason, a
baseline, a check failing on the base too, a flaky one, one killed for memory with its
failing tests, an unverified note and an error."""

from __future__ import annotations

from golem.blueprint import RunState
from golem.checks import CheckResult, TestFailure

OOM = "out of memory: killed at the box's 512 MB limit"


def result(name: str, command: str, exit_code: int, **fields: object) -> CheckResult:
    """A check's result: passed when it exited 0."""
    return CheckResult.model_validate(
        {"name": name, "command": command, "passed": exit_code == 0, "exit_code": exit_code,
         "duration": 1.5, **fields}
    )  # fmt: skip


def with_outcomes(state: RunState) -> RunState:
    """``state`` with the results above (what DEPS, VERIFY and REPORTS record)."""
    lint = result("lint", "ruff check .", 1)
    failure = TestFailure(name="tests/test_calc.py::test_add", message="assert 0 == 3")
    return state.model_copy(
        update={
            "prepared": [
                result("install", "uv sync", 0),
                result("setup", "npm run prepare | tee log", 137, reason=OOM),
            ],
            "baseline": [lint, result("test", "pytest -q", 0)],
            "checks": [
                lint.model_copy(update={"preexisting": True}),
                result("build", "python -m build", 0, flaky=True),
                result("test", "pytest -q", 137, reason=OOM, failures=[failure]),
            ],
            "unverified": "no check ran on the change",
            "error": "setup failed: npm run prepare | tee log (out of memory)",
        }
    )
