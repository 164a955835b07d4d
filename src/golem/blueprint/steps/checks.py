"""The repository's own checks (setup, lint, build, test), run in the run's box."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Literal

from golem.blueprint.events import CheckFinished
from golem.blueprint.execution import Execution
from golem.blueprint.model import BoxNode
from golem.blueprint.steps.check_output import TAIL, LiveCheckOutput
from golem.checks import STARTED, CheckResult, check_result, junit_written
from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent
from golem.forge import markdown
from golem.sandbox import Box, ExecRequest

__all__ = [
    "CHECK_TIMEOUT",
    "GOAL",
    "commands_of",
    "describe_failure",
    "describe_failures",
    "run_box_node",
    "run_check",
    "run_checks",
]

CHECK_TIMEOUT = 1800.0
TAIL_IN_ERROR = 20
GOAL = "goal"
"""The check a goal loop's run verifies its goal with (``RunRequest.goal_check``)."""


def commands_of(ex: Execution, names: list[str]) -> list[tuple[str, str]]:
    """(check name, command) pairs: a name of the repo's conventions expands to its
    commands (but those dropped, whose preparation failed); anything else is a shell
    command of its own."""
    conventions = ex.state.conventions
    dropped = {(check.name, check.command) for check in ex.state.dropped}
    pairs: list[tuple[str, str]] = []
    for name in names:
        if name == GOAL:
            goal = ex.state.request.goal_check
            pairs.extend([(GOAL, goal)] if goal else [])
        elif name in ("install", "setup", "lint", "build", "test"):
            commands = getattr(conventions, name) if conventions is not None else []
            pairs.extend((name, c) for c in commands if (name, c) not in dropped)
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
    results: list[CheckResult] = []
    for name, command in commands_of(ex, names):
        result = await run_check(ex, node, name, command, round_=round_, timeout=timeout, box=box)
        results.append(result)
        if stop_at_failure and not result.passed:
            break
    return results


async def run_check(
    ex: Execution,
    node: str,
    name: str,
    command: str,
    *,
    round_: int = 0,
    timeout: float | None = None,
    box: Box | None = None,
) -> CheckResult:
    """Run one check in ``box`` (default: the run's box): its output live, its result
    (its failures parsed, the reason it failed) an event."""
    box = box or await ex.box()
    request = ExecRequest(
        cmd=command,
        workdir="/workspace",
        timeout=timeout or CHECK_TIMEOUT,
        files={STARTED: b""},  # what is newer, the check wrote (its JUnit XML)
    )
    live = LiveCheckOutput(ex, node, round_, name, command)
    ended = await _follow(box.stream(request), live)
    tails = live.finish()
    junit = await junit_written(box, command=command) if ended.exit_code != 0 else []
    result = check_result(
        name,
        command,
        ended,
        tails.stdout,
        tails.stderr,
        junit=junit,
        memory=box.spec.memory,
        timeout=request.timeout,
        idle_timeout=request.idle_timeout or box.spec.idle_timeout,
        start_error=tails.start_error,
        complete=max(len(tails.stdout), len(tails.stderr)) < TAIL,
    )
    ex.emit(CheckFinished(run_id=ex.state.id, node=node, round=round_, check=result))
    return result


async def _follow(events: AsyncGenerator[ExecEvent, None], live: LiveCheckOutput) -> ExitEvent:
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
        await events.aclose()
    assert ended is not None  # a call's events end with its exit, or raise
    return ended


async def run_box_node(ex: Execution, node: BoxNode) -> tuple[Literal["success", "failure"], str]:
    """A box node: its commands in order, stopping at the first that fails. Their results
    are the run's ``prepared`` ones; a failure is the run's ``error``, saying what failed."""
    names: list[str] = [node.check] if node.check else list(node.run)
    results = await run_checks(ex, node.id, names, stop_at_failure=True)
    await ex.mark_dependencies()  # what these commands did to them is the run's own
    await ex.sync()
    ran = {(result.name, result.command) for result in results}
    state = ex.state
    state.prepared = [r for r in state.prepared if (r.name, r.command) not in ran] + results
    failed = [result for result in results if not result.passed]
    if failed:
        state.error = f"{node.id} failed: {describe_failure(failed[0], tail=TAIL_IN_ERROR)}"
        ex.save()
        return "failure", f"failed: {', '.join(result.name for result in failed)}"
    ex.save()
    return "success", f"{len(results)} command(s) passed"


def describe_failure(result: CheckResult, *, tail: int | None = None) -> str:
    """One failed check: its command, how it ended, and its output's last lines."""
    output = result.output_tail
    if tail is not None:
        output = "\n".join(output.splitlines()[-tail:])
    return f"{markdown.code(result.command)} ({_how(result)})\n\n{markdown.block(output)}"


def _how(result: CheckResult) -> str:
    if result.reason:
        return result.reason
    return "timed out" if result.timed_out else f"exit {result.exit_code}"


def describe_failures(results: list[CheckResult]) -> str:
    """The failing checks held against the change, as the fix prompt and the escalation
    show them (with the progress on the tests the task and the change concern: "these
    still fail; 2 of 4 now pass"); what fails on the base commit too, untouched, or failed
    once and then passed, is named after them as not the change's doing."""
    held = [result for result in results if not result.passed and not result.preexisting]
    parts = [f"### {result.name}: {describe_failure(result)}{_progress(result)}" for result in held]
    not_yours = [
        f"- {result.name}: {markdown.code(result.command)} "
        + ("fails on the base commit too" if result.preexisting else "failed once, then passed")
        for result in results
        if result.preexisting or result.flaky
    ]
    not_yours += [
        f"- {result.name}: `{result.command}`: {_names(result.set_aside)} fail on the base "
        "commit too, the same way"
        for result in held
        if result.set_aside
    ]
    if not_yours:
        parts.append(
            "Not yours (already so before your change; leave them unless the task is about "
            "them):\n" + "\n".join(not_yours)
        )
    return "\n\n".join(parts) or "(no failing checks)"


def _progress(result: CheckResult) -> str:
    """What the fixer is told of the tests of its task that failed on the base commit."""
    progress = result.progress
    if progress is None or progress.passing == progress.of:
        return ""
    return (
        f"\n\nThese tests failed before your change, and the task or your change concerns "
        f"them: they are yours to make pass. These still fail; {progress}."
    )


def _names(names: list[str], shown: int = 10) -> str:
    listed = ", ".join(f"`{name}`" for name in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")
