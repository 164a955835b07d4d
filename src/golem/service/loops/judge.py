"""Judging a goal loop's iteration: what its run's goal check measured, whether that is
progress, and where the loop goes next.

Progress is measured, never told: an iteration made progress when its goal check passed
(exit 0), or when golem's report parsers found fewer failing tests in its output than in
the measure before it (the previous iteration's; for the first, the check on the base
commit). A check whose failures the parsers cannot read makes progress only by passing.
A run that ended before its goal check ran measured nothing, and made none. With nothing
to compare with (no measure before), a measure counts as progress: it is the first."""

from __future__ import annotations

from golem.blueprint import RunState
from golem.checks import CheckResult
from golem.service.loops.model import STALL_LIMIT, GoalLoop, GoalMeasure, PullRequestRef

__all__ = ["judge_iteration", "measure_of"]

GOAL = "goal"
SHOWN_FAILING = 20


def measure_of(result: CheckResult | None) -> GoalMeasure | None:
    """What a goal check's result measured (None: it did not run)."""
    if result is None:
        return None
    failing = [failure.name for failure in result.failures]
    return GoalMeasure(
        passed=result.passed,
        exit_code=result.exit_code,
        failures=len(failing) if failing else (0 if result.passed else None),
        failing=failing[:SHOWN_FAILING],
    )


def _goal(results: list[CheckResult] | None) -> CheckResult | None:
    return next((r for r in reversed(results or []) if r.name == GOAL), None)


def _progress(before: GoalMeasure | None, now: GoalMeasure | None) -> tuple[bool, str]:
    if now is None:
        return False, "no measure: the run ended before its goal check ran"
    if now.passed:
        return True, "the goal check passed"
    if before is None:
        return True, f"first measure: {now.said()}"
    if before.failures is not None and now.failures is not None:
        shrank = now.failures < before.failures
        return shrank, f"{before.failures} → {now.failures} failing tests"
    return False, f"{now.said()}, as before ({before.said()}): no failing test count shrank"


def judge_iteration(loop: GoalLoop, run: RunState) -> GoalLoop:
    """``loop`` with its current iteration judged on its ended ``run``, its spending, its
    pull request and its status moved on (complete, stopped for no progress or at its last
    iteration, budget-limited)."""
    current = loop.current
    assert current is not None, "a loop judged without an iteration in progress"
    if loop.baseline is None and not loop.iterations[:-1]:
        loop.baseline = measure_of(_goal(run.baseline))
    before = _last_measure(loop)
    now = measure_of(_goal(run.checks))
    progressed, verdict = _progress(before, now)
    loop.iterations[-1] = current.model_copy(
        update={
            "status": run.status,
            "cost_usd": run.cost_usd,
            "measure": now,
            "progress": progressed,
            "verdict": verdict,
        }
    )
    loop.spent_usd += run.cost_usd
    loop.stalled = 0 if progressed else loop.stalled + 1
    if run.pr is not None and loop.pr is None:
        pr = run.pr
        loop.pr = PullRequestRef(repo=pr.repo, number=pr.number, url=pr.url, branch=pr.head)
    return _next_status(loop, now)


def _last_measure(loop: GoalLoop) -> GoalMeasure | None:
    """The measure the current iteration is compared with."""
    for iteration in reversed(loop.iterations[:-1]):
        if iteration.measure is not None:
            return iteration.measure
    return loop.baseline


def _next_status(loop: GoalLoop, now: GoalMeasure | None) -> GoalLoop:
    """Where an active loop goes after an iteration (a paused or stopped one stays)."""
    if loop.status != "active":
        return loop
    count = len(loop.iterations)
    left = loop.left_usd()
    if now is not None and now.passed:
        loop.status = "complete"
        loop.reason = f"the goal holds: its check passed in iteration {count}"
    elif loop.stalled >= STALL_LIMIT:
        loop.status = "stopped"
        loop.reason = (
            f"no progress on the goal check in {loop.stalled} iterations in a row "
            f"({loop.iterations[-1].verdict})"
        )
    elif left is not None and left <= 0:
        loop.status = "budget-limited"
        loop.reason = f"spent ${loop.spent_usd:.4f} of its ${loop.request.budget_usd:.2f} budget"
    elif count >= loop.request.max_iterations:
        loop.status = "stopped"
        loop.reason = f"its {count} iterations are done and the goal does not hold yet"
    return loop
