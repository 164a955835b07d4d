"""The repository's own checks (setup, lint, build, test), run in the run's box."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Literal

from golem.blueprint.events import CheckFinished
from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode
from golem.blueprint.reports import check_result
from golem.blueprint.steps.check_output import LiveCheckOutput
from golem.blueprint.steps.check_reports import STARTED, junit_written
from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent
from golem.forge import CheckResult
from golem.sandbox import Box, ExecRequest

__all__ = ["CHECK_TIMEOUT", "commands_of", "describe_failures", "run_box_node", "run_checks"]

CHECK_TIMEOUT = 1800.0


def commands_of(ex: Execution, names: list[str]) -> list[tuple[str, str]]:
    """(check name, command) pairs: a name of the repo's conventions expands to its
    commands; anything else is a shell command of its own."""
    conventions = ex.state.conventions
    pairs: list[tuple[str, str]] = []
    for name in names:
        if name in ("install", "setup", "lint", "build", "test"):
            commands = getattr(conventions, name) if conventions is not None else []
            pairs.extend((name, command) for command in commands)
        else:
            pairs.append((name, name))
    return pairs


async def run_checks(
    ex: Execution,
    node: str,
    names: list[str],
    *,
    round_: int = 0,
    stop_at_failure: bool = False,
    timeout: float | None = None,
    box: Box | None = None,
) -> list[CheckResult]:
    """Run the checks in ``box`` (default: the run's box); each one's output streams into
    the run's events as it comes (CheckOutput), then its result is an event
    (CheckFinished)."""
    box = box or await ex.box()
    results: list[CheckResult] = []
    for name, command in commands_of(ex, names):
        request = ExecRequest(
            cmd=command, workdir="/workspace", timeout=timeout or CHECK_TIMEOUT,
            files={STARTED: b""},  # what is newer, the check wrote (its JUnit XML)
        )  # fmt: skip
        live = LiveCheckOutput(ex, node, round_, name, command)
        ended = await _follow(box.stream(request), live)
        tails = live.finish()
        junit = await junit_written(box) if ended.exit_code != 0 else []
        result = check_result(
            name, command, ended, tails.stdout, tails.stderr, junit=junit,
            memory=box.spec.memory, timeout=request.timeout,
            idle_timeout=request.idle_timeout or box.spec.idle_timeout,
            start_error=tails.start_error,
        )  # fmt: skip
        results.append(result)
        ex.emit(CheckFinished(run_id=ex.state.id, node=node, round=round_, check=result))
        if stop_at_failure and not result.passed:
            break
    return results


async def _follow(events: AsyncIterator[ExecEvent], live: LiveCheckOutput) -> ExitEvent:
    """Read a call's events to their end into ``live``, sending what has gathered when it
    is due even while the call prints nothing; the call's exit."""
    ended: ExitEvent | None = None
    pending = asyncio.ensure_future(anext(events))
    try:
        while True:
            done, _ = await asyncio.wait({pending}, timeout=live.due_in())
            if not done:
                live.flush()
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                break
            if isinstance(event, ExitEvent):
                ended = event
            elif isinstance(event, OutputEvent):
                live.feed(event)
            elif isinstance(event, ErrorEvent):
                live.could_not_start(event.message)
            pending = asyncio.ensure_future(anext(events))
    finally:
        if not pending.done():  # cancelled, or a sink failed: stop the call
            pending.cancel()
            await asyncio.wait({pending})
        if isinstance(events, AsyncGenerator):
            await events.aclose()
    assert ended is not None  # a call's events end with its exit, or raise
    return ended


async def run_box_node(ex: Execution, node: BoxNode) -> tuple[Literal["success", "failure"], str]:
    """A box node: its commands in order, stopping at the first that fails."""
    names: list[str] = [node.check] if node.check else list(node.run)
    results = await run_checks(ex, node.id, names, stop_at_failure=True)
    await ex.sync()
    failed = [result.name for result in results if not result.passed]
    if failed:
        return "failure", f"failed: {', '.join(failed)}"
    return "success", f"{len(results)} command(s) passed"


def describe_failures(results: list[CheckResult]) -> str:
    """The failing checks as the fix prompt and the escalation show them."""
    parts = []
    for result in results:
        if result.passed:
            continue
        how = "timed out" if result.timed_out else f"exit {result.exit_code}"
        why = f"\n\nWhy: {result.reason}" if result.reason else ""
        fence = "```"
        while fence in result.output_tail:  # output holding a fence cannot close ours
            fence += "`"
        parts.append(
            f"### {result.name}: `{result.command}` ({how}){why}\n\n"
            f"{fence}\n{result.output_tail}\n{fence}"
        )
    return "\n\n".join(parts) or "(no failing checks)"
