"""Runs the CLI in the box and turns what it prints into events as it arrives: every line
as an ExternalOutput, and standard output also through the template's parser. A watcher
may stop the CLI between lines (a budget golem holds for it is spent)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from golem.agent.events import AgentEvent, ExternalOutput, OutputStream
from golem.agent.external.parsers import OutputParser
from golem.agent.external.plan import Invocation
from golem.core import EventSink, GolemError, NetworkEvent
from golem.sandbox import Box, ErrorEvent, ExecEvent, ExecRequest, ExitEvent, OutputEvent

__all__ = ["Ended", "Watcher", "run_call"]

STDERR_TAIL = 2000

Watcher = Callable[[], "str | None"]
"""Asked after each line of standard output: a reason to stop the CLI now, or None."""


@dataclass
class Ended:
    """How the CLI's process ended."""

    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    failure: str | None = None
    """Why the CLI could not run or the box failed under it, if so."""
    stopped: str | None = None
    """Why golem stopped the CLI, if it did."""
    stderr_tail: str = ""


class _Lines:
    """Splits a stream's bytes into lines of text, keeping a partial last line for later
    (so a character split between chunks is decoded whole)."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, data: bytes) -> list[str]:
        *lines, self._partial = (self._partial + data).split(b"\n")
        return [_text(line) for line in lines]

    def flush(self) -> list[str]:
        rest, self._partial = self._partial, b""
        return [_text(rest)] if rest else []


def _text(line: bytes) -> str:
    return line.removesuffix(b"\r").decode(errors="replace")


class _Reader:
    """The state of one call's reading: partial lines, the parser, how it ended."""

    def __init__(self, parser: OutputParser, emit: EventSink[AgentEvent]) -> None:
        self.parser = parser
        self.emit = emit
        self.ended = Ended()
        self.lines = {"stdout": _Lines(), "stderr": _Lines()}

    def deliver(self, stream: OutputStream, text: str) -> None:
        self.emit(ExternalOutput(stream=stream, line=text))
        if stream == "stdout":
            for event in self.parser.feed(text):
                self.emit(event)
        else:
            self.ended.stderr_tail = (self.ended.stderr_tail + text + "\n")[-STDERR_TAIL:]

    def take(self, event: ExecEvent, watch: Watcher) -> bool:
        """Handle one event of the call; False when golem must stop the CLI."""
        if isinstance(event, OutputEvent):
            for line in self.lines[event.type].feed(event.data):
                self.deliver(event.type, line)
                if event.type == "stdout" and (reason := watch()) is not None:
                    self.ended.stopped = reason
                    return False
        elif isinstance(event, NetworkEvent) and not event.allowed:
            where = f"{event.method} {event.host}:{event.port}"
            self.deliver("golem", f"egress refused {where} ({event.rule})")
        elif isinstance(event, ErrorEvent):
            self.ended.failure = event.message
        elif isinstance(event, ExitEvent):
            self.ended.exit_code, self.ended.timed_out = event.exit_code, event.timed_out
            self.ended.truncated = event.truncated
        return True

    def flush(self) -> None:
        for stream in ("stdout", "stderr"):
            for line in self.lines[stream].flush():
                self.deliver(stream, line)


async def run_call(
    box: Box,
    call: Invocation,
    parser: OutputParser,
    emit: EventSink[AgentEvent],
    watch: Watcher = lambda: None,
) -> Ended:
    """Run ``call`` in ``box`` to its end (or until ``watch`` gives a reason to stop it,
    when the call is killed), emitting events as lines arrive."""
    reader = _Reader(parser, emit)
    request = ExecRequest(cmd=call.argv, env=call.env, stdin=call.stdin, timeout=call.timeout)
    try:  # closing a stream early kills its call
        async with contextlib.aclosing(box.stream(request)) as events:
            async for event in events:
                if not reader.take(event, watch):
                    break
    except GolemError as exc:  # the box went away or stopped answering
        reader.ended.failure = exc.message
    if reader.ended.stopped is None:
        reader.flush()
    return reader.ended
