"""One of the repository's checks, run in a box: its output live as it comes, then its
result, with the failures its output (or the JUnit XML it wrote) names and why it failed
when the exit code does not say."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

from golem.checks.contracts import CheckResult
from golem.checks.live import TAIL, LiveCheckOutput, LiveOutput
from golem.checks.reports import check_result
from golem.checks.reports.written import STARTED, junit_written
from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent
from golem.sandbox import Box, ExecRequest

__all__ = ["CHECK_TIMEOUT", "run_check"]

CHECK_TIMEOUT = 1800.0


async def run_check(
    box: Box,
    name: str,
    command: str,
    *,
    live: LiveOutput,
    secrets: Sequence[str] = (),
    timeout: float | None = None,
) -> CheckResult:
    """Run one check in ``box``: its output to ``live`` as it comes (``secrets`` masked),
    its result (its failures parsed, the reason it failed) returned."""
    request = ExecRequest(
        cmd=command,
        workdir="/workspace",
        timeout=timeout or CHECK_TIMEOUT,
        files={STARTED: b""},  # what is newer, the check wrote (its JUnit XML)
    )
    output = LiveCheckOutput(live, secrets)
    ended = await _follow(box.stream(request), output)
    tails = output.finish()
    junit = await junit_written(box, command=command) if ended.exit_code != 0 else []
    return check_result(
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
