"""A goal loop as the store keeps it: what it works toward (a goal in words, and the
command whose exit 0 says it holds), its limits (iterations, dollars), each iteration's run
and what its goal check measured, and where the loop stands."""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.core.isolation import IsolationTier

__all__ = [
    "KIND",
    "LOOP_STATUSES",
    "GoalLoop",
    "GoalMeasure",
    "Iteration",
    "LoopRequest",
    "LoopStatus",
    "PullRequestRef",
]

KIND = "loop"
LoopStatus = Literal["active", "paused", "budget-limited", "complete", "stopped"]
LOOP_STATUSES: tuple[str, ...] = ("active", "paused", "budget-limited", "complete", "stopped")
ENDED = frozenset({"budget-limited", "complete", "stopped"})
STALL_LIMIT = 2
"""Iterations in a row without progress on the goal check after which a loop stops."""


class LoopRequest(BaseModel):
    """What ``golem loop`` (or ``POST /v1/loops``) asks for."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(description="A git URL or (server_files) a local repository path.")
    goal: str = Field(min_length=1, max_length=20_000, description="The goal, in words.")
    until: str = Field(
        min_length=1,
        max_length=4000,
        description="The shell command, run in the run's box, whose exit 0 says the goal "
        "holds (pytest -q).",
    )
    max_iterations: int = Field(5, ge=1, le=100, description="Iterations (runs) at most.")
    budget_usd: float | None = Field(
        None, gt=0, description="Dollars for the whole loop; each run gets what is left."
    )
    blueprint: str = Field("minion", description="The first iteration's blueprint.")
    follow_up_blueprint: str = Field(
        "follow-up",
        description="The blueprint of the iterations that go on from a pull request.",
    )
    model: str | None = Field(None, description="provider/model; default: [models] default.")
    forge: Literal["github", "gitlab", "local"] | None = Field(
        None, description="Where the pull request goes; default: [forge] provider."
    )
    base: str | None = Field(None, description="Base branch; default: the remote's default.")
    tier: IsolationTier | None = Field(None, description="The isolation tier of its runs.")


class GoalMeasure(BaseModel):
    """What one run of the goal check said: passed, its exit code, and the failing tests
    golem's report parsers found in its output (None: it names none they can read)."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    exit_code: int
    failures: int | None = None
    failing: list[str] = Field(default_factory=list, description="The first failing tests.")

    def said(self) -> str:
        """In words: ``passed``, ``exit 1, 3 failing tests``."""
        if self.passed:
            return "passed"
        counted = "" if self.failures is None else f", {self.failures} failing tests"
        return f"exit {self.exit_code}{counted}"


class Iteration(BaseModel):
    """One run of the loop, and what it made of the goal."""

    model_config = ConfigDict(extra="forbid")

    number: int
    run_id: str
    status: str = Field("", description="The run's end (empty while it runs).")
    cost_usd: float = 0.0
    measure: GoalMeasure | None = None
    progress: bool | None = Field(None, description="None while it runs.")
    verdict: str = ""


class PullRequestRef(BaseModel):
    """The pull request the loop's iterations work on."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    number: int
    url: str
    branch: str


class GoalLoop(BaseModel):
    """A goal loop: its request, its iterations, where it stands and why."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tenant: str
    role: str | None = Field(
        None, description="The role of the key that asked for it (None: the operator's CLI)."
    )
    request: LoopRequest
    status: LoopStatus = "active"
    reason: str = ""
    created: float = Field(default_factory=time.time)
    updated: float = Field(default_factory=time.time)
    iterations: list[Iteration] = Field(default_factory=list)
    spent_usd: float = 0.0
    baseline: GoalMeasure | None = Field(
        None, description="The goal check on the base commit, before the first iteration."
    )
    stalled: int = Field(0, description="Iterations in a row without progress.")
    pr: PullRequestRef | None = None
    stop_requested: bool = False

    @property
    def ended(self) -> bool:
        """Whether the loop is over (complete, budget-limited or stopped)."""
        return self.status in ENDED

    @property
    def current(self) -> Iteration | None:
        """The iteration whose run has not been judged yet."""
        last = self.iterations[-1] if self.iterations else None
        return last if last is not None and last.progress is None else None

    def left_usd(self) -> float | None:
        """Dollars left (None: no budget)."""
        budget = self.request.budget_usd
        return None if budget is None else budget - self.spent_usd
