"""Loops: verify with the repository's checks; fix and verify again, at most N rounds."""

from __future__ import annotations

from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import LoopNode
from golem.blueprint.steps.agent import paused_step, run_agent
from golem.blueprint.steps.verify import verify, why_unverified
from golem.checks import CheckResult, describe_failures, held_against
from golem.core.errors import NotVerified
from golem.forge import markdown

__all__ = ["run_loop"]


async def run_loop(ex: Execution, node: LoopNode) -> Literal["success", "failure"]:
    """``success`` once no check fails because of the change; ``failure`` when some still
    do after ``max_rounds`` fix rounds (or a fix cannot run). Failures already there on the
    base commit, and checks that pass when run again, cost no round. A resumed run goes on
    from the rounds it had finished; one paused in a fix goes on with that fix."""
    state = ex.state
    if state.attempts_concluded is not None and state.attempts_concluded[0] == node.id:
        concluded = state.attempts_concluded[1]  # a best-of-N node's attempts ran this loop
        state.attempts_concluded = None
        return concluded
    while True:
        results = state.checks
        if paused_step(ex, node.id) is None:
            results = await verify(ex, node, round_=state.rounds)
            state.checks = results
            ex.save()
            if not held_against(results):
                return _conclude(ex, node, results)
            if state.rounds >= node.max_rounds:
                return "failure"
            state.rounds += 1
            ex.save()
        outcome = await run_agent(
            ex,
            node.id,
            node.fix,
            failures=describe_failures(results),
            checks=_all_checks(results),
            round=state.rounds,
            max_rounds=node.max_rounds,
        )
        if outcome is None:
            return "failure"


def _conclude(
    ex: Execution, node: LoopNode, results: list[CheckResult]
) -> Literal["success", "failure"]:
    """Success when a check verified the change; otherwise as ``when_unverified`` says."""
    excused = [f"{r.name} ({_verdict(r)})" for r in results if r.preexisting or r.flaky]
    if excused:
        ex.note(f"not held against the change: {', '.join(excused)}", node.id)
    reason = why_unverified(ex, node, results)
    ex.state.unverified = reason
    ex.state.verified = reason is None
    ex.save()
    if reason is None:
        return "success"
    ex.note(f"not verified: {reason}", node.id)
    if node.when_unverified == "fail":
        raise NotVerified(f"no check verified the change: {reason}")
    return "success" if node.when_unverified == "draft" else "failure"


def _all_checks(results: list[CheckResult]) -> str:
    return "\n".join(f"- {r.name}: {markdown.code(r.command)} {_verdict(r)}" for r in results)


def _verdict(result: CheckResult) -> str:
    if result.preexisting:
        return "failed, as on the base commit"
    if result.flaky:
        return "flaky: passed when run again"
    return "passed" if result.passed else "FAILED"
