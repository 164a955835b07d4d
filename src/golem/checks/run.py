"""One of the repository's checks, run in a box: its output live as it comes, then its
result, with the failures its output (or the JUnit XML it wrote) names and why it failed
when the exit code does not say.

What it prints goes on as it arrives (a run makes CheckOutput events of it), masked with
the run's secrets, coalesced and capped.

Small chunks are gathered until ``FLUSH_BYTES`` are waiting or ``FLUSH_SECONDS`` have
passed since the first of them (a check that prints a line a millisecond makes a few events
a second, not a thousand); a check's live output stops at ``LIVE_CAP`` bytes, and a last
``golem`` line says how much was left out. Whatever the cap, the last ``TAIL`` characters
of each stream are kept for the check's result (a test runner's summary is at its end).
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from golem.agent import OutputStream
from golem.checks.contracts import CheckResult
from golem.checks.reports import check_result
from golem.checks.reports.written import STARTED, junit_written
from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent
from golem.core.masking import SecretMasker
from golem.core.sizes import format_size
from golem.sandbox import Box, ExecRequest

__all__ = [
    "CHECK_TIMEOUT",
    "FLUSH_BYTES",
    "FLUSH_SECONDS",
    "LIVE_CAP",
    "TAIL",
    "LiveCheckOutput",
    "LiveOutput",
    "Tails",
    "run_check",
]

Printed = Literal["stdout", "stderr"]
LiveOutput = Callable[[OutputStream, str], None]
"""Where a check's output goes as it comes: the stream, and the text (masked)."""

FLUSH_BYTES = 64 * 1024
FLUSH_SECONDS = 0.5
LIVE_CAP = 256 * 1024
TAIL = 64 * 1024
CHECK_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Tails:
    """The end of what a check printed on each stream (masked, decoded), and why it could
    not start when it could not."""

    stdout: str
    stderr: str
    start_error: str | None = None


class MaskedText:
    """One output stream as text: the run's secrets masked on the bytes first (a secret
    split across chunks is masked whole), then UTF-8 decoded incrementally (a character
    split across chunks comes out whole)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        self.masker = SecretMasker(secrets)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        return self.decoder.decode(self.masker.feed(data))

    def flush(self) -> str:
        return self.decoder.decode(self.masker.flush(), final=True)


class LiveCheckOutput:
    """The live output of one check, sent to ``emit``: feed it the call's output events,
    ask ``due_in`` how long it may wait for more before it must ``flush``, and ``finish``
    it at the end."""

    def __init__(self, emit: LiveOutput, secrets: Sequence[str] = ()) -> None:
        self._emit = emit
        self._decoders: dict[Printed, MaskedText] = {
            "stdout": MaskedText(secrets),
            "stderr": MaskedText(secrets),
        }
        self._tails: dict[Printed, str] = {"stdout": "", "stderr": ""}
        self._start_error: str | None = None
        self._stream: OutputStream = "stdout"
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._since = 0.0
        self._sent = 0
        self._left_out = 0

    def feed(self, event: OutputEvent) -> None:
        """Take a chunk of output: masked and decoded, kept for the tail, and sent when
        enough has gathered."""
        self.add(event.type, self._decoders[event.type].feed(event.data))

    def add(self, stream: Printed, text: str) -> None:
        """Take text the check (or golem about it: ``stderr`` for a call that failed to
        start) printed on ``stream``."""
        if not text:
            return
        self._tails[stream] = (self._tails[stream] + text)[-TAIL:]
        size = len(text.encode("utf-8", "surrogatepass"))
        room = LIVE_CAP - self._sent - self._pending_bytes
        if room <= 0:
            self._left_out += size
            return
        if size > room:
            self._left_out += size - room
            text = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
            size = room
        if stream != self._stream:
            self.flush()
            self._stream = stream
        if not self._pending:
            self._since = time.monotonic()
        self._pending.append(text)
        self._pending_bytes += size
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def could_not_start(self, message: str) -> None:
        """The call did not start: say why on ``stderr`` and keep it for the result."""
        self._start_error = message
        self.add("stderr", message + "\n")

    def due_in(self) -> float | None:
        """Seconds until what is gathered must be sent (None: nothing is waiting)."""
        if not self._pending:
            return None
        return max(self._since + FLUSH_SECONDS - time.monotonic(), 0.0)

    def flush(self) -> None:
        """Send what has gathered as one event."""
        if not self._pending:
            return
        text, self._pending = "".join(self._pending), []
        self._sent += self._pending_bytes
        self._pending_bytes = 0
        self._emit(self._stream, text)

    def finish(self) -> Tails:
        """Send the rest (and what the cap left out); the end of each stream, for the
        check's result."""
        for stream, decoder in self._decoders.items():
            self.add(stream, decoder.flush())
        self.flush()
        if self._left_out:
            self._emit(
                "golem",
                f"[{self._left_out} more bytes of output not shown live (the live cap "
                f"is {format_size(LIVE_CAP)} per check); the check's result keeps its tail]",
            )
        return Tails(self._tails["stdout"], self._tails["stderr"], self._start_error)


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
