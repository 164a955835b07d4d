"""Loops: verify with the repository's checks; fix and verify again, at most N rounds."""

from __future__ import annotations

from typing import Literal

from golem.blueprint.execution import Execution
from golem.blueprint.model import LoopNode
from golem.blueprint.steps.agent import run_agent
from golem.blueprint.steps.checks import describe_failures, run_checks
from golem.forge import CheckResult

__all__ = ["run_loop"]


async def run_loop(ex: Execution, node: LoopNode) -> Literal["success", "failure"]:
    """``success`` once every check passes; ``failure`` when they still fail after
    ``max_rounds`` fix rounds (or a fix cannot run). A resumed run goes on from the rounds
    it had finished."""
    state = ex.state
    while True:
        results = await run_checks(ex, node.id, node.checks, round_=state.rounds)
        state.checks = results
        ex.save()
        if all(result.passed for result in results):
            return "success"
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


def _all_checks(results: list[CheckResult]) -> str:
    return "\n".join(
        f"- {r.name}: `{r.command}` {'passed' if r.passed else 'FAILED'}" for r in results
    )
