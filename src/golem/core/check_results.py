"""What running one of a repository's checks gives: its result, the failing tests its output
names, and the progress on the tests the change concerns.

The model of ``golem.checks``, kept here, below the forge, since the forge records a pull
request's checks (the local forge keeps them with it); import it from ``golem.checks``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CheckResult", "TestFailure", "TestProgress"]


class TestFailure(BaseModel):
    """One failing test as a check's output (or its JUnit XML) names it."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The test as its framework names it, e.g. tests/t.py::test_x.")
    message: str = Field("", description="The assertion or error, trimmed.")
    file: str | None = None
    line: int | None = None


class TestProgress(BaseModel):
    """How many of the tests that failed on the base commit, and that the task or the
    change concerns, pass now: ``2 of 4 now pass``."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    passing: int = Field(ge=0)
    of: int = Field(ge=0)

    def __str__(self) -> str:
        return f"{self.passing} of {self.of} now pass"


class CheckResult(BaseModel):
    """One of the repository's own checks (install, setup, lint, build, test) as run in
    the box."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="setup, lint, build or test (or a blueprint's own name).")
    command: str
    passed: bool
    exit_code: int
    duration: float
    output_tail: str = Field(
        "",
        description="What the agent and a person read: the failures found, then the "
        "end of its output (ANSI codes removed, secrets masked).",
    )
    timed_out: bool = False
    reason: str | None = Field(
        None,
        description="Why it failed when the exit code does not say: out of memory, timed "
        "out, printed nothing for too long, could not start.",
    )
    failures: list[TestFailure] = Field(
        default_factory=list, description="The failing tests found in its output."
    )
    flaky: bool = Field(False, description="It failed, then passed when run again.")
    preexisting: bool = Field(
        False,
        description="It fails on the base commit too (the baseline), the same way, in tests "
        "neither the task nor the change concerns: not held against the change.",
    )
    set_aside: list[str] = Field(
        default_factory=list,
        description="Its failing tests that failed the same way on the base commit and that "
        "neither the task nor the change concerns: not the change's to fix.",
    )
    progress: TestProgress | None = Field(
        None,
        description="How far the change got with the tests that failed on the base commit "
        "and that the task or the change concerns.",
    )
