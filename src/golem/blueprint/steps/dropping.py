"""Checks that cannot be prepared are dropped, not fatal: an install command that serves
only some checks (``golem.context.checks_served``: a tool's first run that fetches its
hooks or package, a pip install of the checks' tools) and fails drops those checks (not
run, each with why and what makes it run) and the other commands go on. Any other failing
install, or one that would leave nothing to verify the change with, stops the install.
"""

from __future__ import annotations

import hashlib
import re

from golem.blueprint.execution import Execution
from golem.blueprint.state import DroppedCheck
from golem.blueprint.steps.checks import commands_of, run_check
from golem.checks import CHECK_STEPS, CheckResult, checks_served
from golem.forge import markdown
from golem.sandbox import Box

__all__ = ["fatal_failure", "partial_key", "run_installs"]

_URL_HOST = re.compile(r"\bhttps?://([A-Za-z0-9.-]+)")
OUTPUT_SHOWN = 300


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
    """Drop the checks ``failed`` serves alone, when a test check is left to verify the
    change (only one can, once a check was dropped); whether it did."""
    checks = commands_of(ex, list(CHECK_STEPS))
    served = checks_served(failed.command, [command for _, command in checks])
    if served is None:
        return False
    dropped = [(name, command) for name, command in checks if command in served]
    if not any(name == "test" and (name, command) not in dropped for name, command in checks):
        return False  # nothing would verify the change: the install failed
    reason = _reason(failed)
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


def _reason(failed: CheckResult) -> str:
    """Why a check is not run, and what makes it run."""
    how = failed.reason or ("timed out" if failed.timed_out else f"exit {failed.exit_code}")
    hosts = sorted(set(_URL_HOST.findall(failed.output_tail)))
    reach = (
        f"let the install reach {', '.join(hosts)} (golem.toml's [dependencies] registries)"
        if hosts
        else "let the install reach what it fetches (golem.toml's [dependencies] registries)"
    )
    tail = " ".join(failed.output_tail.split())[-OUTPUT_SHOWN:]
    return (
        f"its preparation {markdown.code(failed.command)} failed ({how}): "
        f"{markdown.code('…' + tail)}; to run it, {reach}, "
        "or name the commands that prepare it in .golem.toml's [commands] install"
    )
