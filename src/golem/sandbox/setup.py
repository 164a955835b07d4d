"""A session's setup script: run once in its new box, before the session is handed out."""

from __future__ import annotations

import contextlib

from golem.core.errors import SetupFailed
from golem.core.events import EventSink, ExecEvent, ExitEvent, OutputEvent
from golem.sandbox.box import LocalBox
from golem.sandbox.models import ExecRequest

__all__ = ["SETUP_OUTPUT_TAIL", "run_setup"]

SETUP_OUTPUT_TAIL = 2000
"""Bytes of a failed setup's output kept for its error."""


async def run_setup(box: LocalBox, script: str, on_event: EventSink[ExecEvent] | None) -> None:
    """Run a session's setup script in its box, its events to ``on_event``; SetupFailed
    with the end of its output when it exits non-zero."""
    tail = b""
    exit_event: ExitEvent | None = None
    request = ExecRequest(cmd=["/bin/sh", "-c", script])
    async with contextlib.aclosing(box.stream(request, phase="setup")) as events:
        async for event in events:
            if on_event is not None:
                on_event(event)
            if isinstance(event, OutputEvent):
                tail = (tail + event.data)[-SETUP_OUTPUT_TAIL:]
            elif isinstance(event, ExitEvent):
                exit_event = event
    if exit_event is None or exit_event.exit_code != 0:
        output = tail.decode(errors="replace")
        code = exit_event.exit_code if exit_event else None
        detail = output.strip().splitlines()[-1] if output.strip() else "no output"
        raise SetupFailed(
            f"the setup script failed with exit code {code} ({detail}); "
            "fix the spec's setup script",
            exit_code=code,
            output=output,
        )
