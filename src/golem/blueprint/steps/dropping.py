"""The install commands in order: a failure that drops checks (``golem.checks.dropped_by``:
not run, each with why and what makes it run) goes on, any other stops the install; the
run keeps what was dropped.
"""

from __future__ import annotations

import hashlib

from golem.blueprint.execution import Execution
from golem.blueprint.state import DroppedCheck
from golem.blueprint.steps.checks import commands_of, run_check
from golem.checks import CHECK_STEPS, CheckResult, dropped_by, why_not_run
from golem.forge import markdown
from golem.sandbox import Box

__all__ = ["fatal_failure", "partial_key", "run_installs"]


async def run_installs(
    ex: Execution, node: str, *, timeout: float, box: Box | None = None
) -> list[CheckResult]:
    """The install commands in order, in ``box`` (default: the run's box): a failure that
    drops checks goes on, any other stops them."""
    results: list[CheckResult] = []
    for name, command in commands_of(ex, ["install"]):
        result = await run_check(ex, node, name, command, timeout=timeout, box=box)
        results.append(result)
        if not result.passed and not _dropped_for(ex, node, result):
            break
    return results


def fatal_failure(ex: Execution, results: list[CheckResult]) -> CheckResult | None:
    """The first failed install that dropped no check: the install failed."""
    dropping = {dropped.preparation for dropped in ex.state.dropped}
    return next((r for r in results if not r.passed and r.command not in dropping), None)


def partial_key(ex: Execution, key: str) -> str:
    """The key an install's archive is kept under: ``key``, or when some of its commands
    failed (checks dropped), a key of its own that no later run computes: those runs
    install afresh (the registry may answer then) rather than take a partial install."""
    failed = sorted({dropped.preparation for dropped in ex.state.dropped})
    if not failed:
        return key
    return hashlib.sha256("\0".join([key, "dropped", *failed]).encode()).hexdigest()


def _dropped_for(ex: Execution, node: str, failed: CheckResult) -> bool:
    """Drop the checks ``failed`` serves alone (``golem.checks.dropped_by``); whether it
    did."""
    dropped = dropped_by(failed, commands_of(ex, list(CHECK_STEPS)))
    if dropped is None:
        return False
    reason = why_not_run(failed)
    ex.state.dropped += [
        DroppedCheck(name=name, command=command, preparation=failed.command, reason=reason)
        for name, command in dropped
    ]
    shown = (
        ", ".join(f"{name} ({markdown.code(command)})" for name, command in dropped) or "no check"
    )
    ex.note(f"not run: {shown}: {reason}", node)
    ex.save()
    return True
