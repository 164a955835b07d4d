"""bash: run a command in the box; long output is kept as head + tail, in full in a file."""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import put_text
from golem.agent.tools.text import count, human_size, utf8
from golem.core import ErrorEvent, ExitEvent, OutputEvent, new_id
from golem.core.errors import ToolProblem
from golem.sandbox import Box, ExecRequest

__all__ = ["BashArguments", "BashTool", "clip"]

LOG_DIR = "/tmp/golem-tool-output"

DESCRIPTION = """Run a shell command in the sandbox (bash -c, or sh -c where the image has \
no bash), in the working directory. Each call starts a fresh shell: cd and variables do not \
carry over, so chain commands with && where needed. Stdin is empty. The result gives the \
output (stdout and stderr interleaved) and the exit code; long output keeps its head and \
tail, and names a file in the box that holds all of it (grep or read it)."""


class BashArguments(BaseModel):
    """Arguments of ``bash``."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The command line to run.")
    timeout: float | None = Field(
        None, gt=0, le=24 * 3600, description="Kill it after this many seconds."
    )
    idle_timeout: float | None = Field(
        None, gt=0, le=24 * 3600, description="Kill it after this many seconds without output."
    )


class BashTool(BoxTool[BashArguments]):
    """Runs a command in the box through the engine and reports output and outcome."""

    def __init__(
        self,
        *,
        timeout: float | None = None,
        head_bytes: int = 8 * 1024,
        tail_bytes: int = 24 * 1024,
        log_dir: str = LOG_DIR,
    ) -> None:
        super().__init__("bash", DESCRIPTION, BashArguments)
        self.timeout = timeout
        """Default time limit; None means the box's own (``BoxSpec.timeout``)."""
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.log_dir = log_dir

    async def act(self, box: Box, arguments: BashArguments) -> ToolResult:
        """Run the command, then clip its output and describe how it ended."""
        shell = box.runtimes.get("bash", "/bin/sh")
        timeout = arguments.timeout or self.timeout or box.spec.timeout
        request = ExecRequest(
            cmd=[shell, "-c", arguments.command],
            timeout=timeout,
            idle_timeout=arguments.idle_timeout,
        )
        chunks: list[bytes] = []
        outcome: ExitEvent | None = None
        async with contextlib.aclosing(box.stream(request)) as events:
            async for event in events:
                if isinstance(event, OutputEvent):
                    chunks.append(event.data)
                elif isinstance(event, ErrorEvent):
                    chunks.append(f"[{event.message}]\n".encode())
                elif isinstance(event, ExitEvent):
                    outcome = event
        assert outcome is not None  # a stream ends with its exit event or raises
        output = b"".join(chunks).decode(errors="replace")  # for the model: text
        output = await self._clipped(box, output, outcome.truncated)
        idle = arguments.idle_timeout or box.spec.idle_timeout
        status = _status(outcome, timeout, idle, box)
        failed = outcome.exit_code != 0 or outcome.timed_out or outcome.idle_timed_out
        return ToolResult(f"{output}{status}", is_error=failed)

    async def _clipped(self, box: Box, output: str, truncated: bool) -> str:
        """The output, or its head and tail with the full text saved in the box."""
        if not output:
            return "(no output)\n"
        if len(utf8(output)) <= self.head_bytes + self.tail_bytes:
            return output if output.endswith("\n") else output + "\n"
        log = f"{self.log_dir}/{new_id('bash')}.log"
        try:
            await put_text(box, log, output)
            kept = "all the output that was kept" if truncated else "the full output"
            saved = f"{kept} is in {log}"
        except ToolProblem as exc:
            saved = f"the full output could not be saved ({exc.message})"
        return clip(output, self.head_bytes, self.tail_bytes, saved)


def clip(text: str, head: int, tail: int, saved: str) -> str:
    """The first ``head`` and last ``tail`` bytes of ``text`` (cut at line ends where one
    is near), with a line in between saying what was left out and where it is."""
    data = utf8(text)
    first = data[:head]
    if (cut := first.rfind(b"\n")) >= head // 2:
        first = first[: cut + 1]
    start = len(data) - tail
    last = data[start:]
    mid_line = data[start - 1 : start] != b"\n"
    if mid_line and 0 <= (cut := last.find(b"\n")) < tail // 2:
        last = last[cut + 1 :]
    left_out = data[len(first) : len(data) - len(last)]
    lines = count(left_out.count(b"\n"), "line")
    note = f"[... {lines} ({human_size(len(left_out))}) left out here; {saved} ...]\n"
    if not first.endswith(b"\n"):
        note = "\n" + note
    ending = "" if last.endswith(b"\n") else "\n"
    return f"{first.decode(errors='ignore')}{note}{last.decode(errors='ignore')}{ending}"


def _status(outcome: ExitEvent, timeout: float, idle: float | None, box: Box) -> str:
    if outcome.timed_out:
        ending = f"[timed out after {timeout:g}s; the command was killed]"
    elif outcome.idle_timed_out:
        silence = f"for {idle:g}s " if idle else ""
        ending = f"[no output {silence}(idle timeout); the command was killed]"
    elif outcome.oom_killed:
        ending = f"[killed: out of memory (exit code {outcome.exit_code})]"
    elif outcome.signal is not None:
        ending = f"[killed by signal {outcome.signal} (exit code {outcome.exit_code})]"
    else:
        ending = f"[exit code {outcome.exit_code}]"
    if outcome.truncated:
        cap = human_size(box.spec.max_output_bytes)
        ending += f"\n[output passed the box's cap of {cap}; what came after it was dropped]"
    return ending
