"""Runs the CLI in the box and turns what it prints into events as it arrives: every line
as an ExternalOutput, and standard output also through the template's parser."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from golem.agent.external.events import ExternalEvent, ExternalOutput, OutputStream
from golem.agent.external.parsers import OutputParser
from golem.agent.external.plan import Invocation
from golem.core import GolemError, NetworkEvent
from golem.sandbox import Box, ErrorEvent, ExecRequest, ExitEvent, OutputEvent

__all__ = ["Ended", "run_call"]

STDERR_TAIL = 2000


@dataclass
class Ended:
    """How the CLI's process ended."""

    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    failure: str | None = None
    """Why the CLI could not run or the box failed under it, if so."""
    stderr_tail: str = ""


class _Lines:
    """Splits a stream's text into lines, keeping a partial last line for later."""

    def __init__(self) -> None:
        self._partial = ""

    def feed(self, text: str) -> list[str]:
        *lines, self._partial = (self._partial + text).split("\n")
        return lines

    def flush(self) -> list[str]:
        rest, self._partial = self._partial, ""
        return [rest] if rest else []


async def run_call(
    box: Box,
    call: Invocation,
    parser: OutputParser,
    emit: Callable[[ExternalEvent], None],
) -> Ended:
    """Run ``call`` in ``box`` to its end, emitting events as lines arrive."""
    ended = Ended()
    lines = {"stdout": _Lines(), "stderr": _Lines()}

    def deliver(stream: OutputStream, text: str) -> None:
        emit(ExternalOutput(stream=stream, line=text))
        if stream == "stdout":
            for event in parser.feed(text):
                emit(event)
        else:
            ended.stderr_tail = (ended.stderr_tail + text + "\n")[-STDERR_TAIL:]

    request = ExecRequest(cmd=call.argv, env=call.env, stdin=call.stdin, timeout=call.timeout)
    try:
        async for event in box.stream(request):
            if isinstance(event, OutputEvent):
                for line in lines[event.type].feed(event.data):
                    deliver(event.type, line)
            elif isinstance(event, NetworkEvent) and not event.allowed:
                where = f"{event.method} {event.host}:{event.port}"
                deliver("golem", f"egress refused {where} ({event.rule})")
            elif isinstance(event, ErrorEvent):
                ended.failure = event.message
            elif isinstance(event, ExitEvent):
                ended.exit_code, ended.timed_out = event.exit_code, event.timed_out
                ended.truncated = event.truncated
    except GolemError as exc:  # the box went away or stopped answering
        ended.failure = exc.message
    for stream in ("stdout", "stderr"):
        for line in lines[stream].flush():
            deliver(stream, line)
    return ended
