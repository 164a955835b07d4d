"""A stdio MCP server run inside a box: its argv is one ``Box.interact`` call, and its
stdin and stdout carry newline-delimited JSON-RPC, bridged to the streams the SDK's
``ClientSession`` reads and writes (as ``mcp.client.stdio`` does for a host process)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage

from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent
from golem.core.spec import MAX_TIMEOUT, WORKSPACE
from golem.core.toolshed_config import McpServer
from golem.sandbox import Box
from golem.sandbox.models import ExecRequest

__all__ = ["ServerProcess", "box_stdio"]

STDERR_TAIL_BYTES = 4096
MAX_LINE_BYTES = 64 * 1024**2
"""A JSON-RPC line longer than this is not kept whole (the server is treated as gone)."""


@dataclass
class ServerProcess:
    """What is known of a server's process: the tail of its stderr, how it ended, and how
    many output bytes the box has carried (a call's output is capped by the box's spec)."""

    output_cap: int
    stderr: bytearray = field(default_factory=bytearray)
    exit: ExitEvent | None = None
    failure: str | None = None
    output_bytes: int = 0

    @property
    def capped(self) -> bool:
        """Whether the box's cap on a call's output was reached: the box drops the rest,
        so the server can answer nothing more (a new process can)."""
        return self.output_bytes >= self.output_cap

    def reset(self) -> None:
        """Forget the last process (a new one starts)."""
        self.stderr.clear()
        self.exit, self.failure, self.output_bytes = None, None, 0

    def feed_stderr(self, data: bytes) -> None:
        """Keep the last ``STDERR_TAIL_BYTES`` of stderr."""
        self.stderr += data
        del self.stderr[:-STDERR_TAIL_BYTES]

    def tail(self) -> str:
        """The stderr tail as text, for error messages."""
        return self.stderr.decode(errors="replace").strip()

    def ended(self) -> str | None:
        """How the process ended, in words, or None while it runs."""
        if self.failure is not None:
            return self.failure
        if self.exit is None:
            return None
        if self.exit.signal is not None:
            return f"it was killed by signal {self.exit.signal}"
        return f"it exited with code {self.exit.exit_code}"


ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]


@asynccontextmanager
async def box_stdio(
    box: Box, server: McpServer, process: ServerProcess
) -> AsyncIterator[tuple[ReadStream, WriteStream]]:
    """Run ``server``'s command in ``box`` for as long as the block lasts; leaving it ends
    the call (the box kills it)."""
    assert server.command is not None
    request = ExecRequest(
        cmd=server.command,
        env=server.env,
        workdir=server.cwd or WORKSPACE,
        timeout=MAX_TIMEOUT,
    )
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    async with box.interact(request) as call:

        async def reader() -> None:
            async with to_session:
                await _read_output(call.events(), process, to_session)

        async def writer() -> None:
            try:
                async with from_session:
                    async for message in from_session:
                        line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await call.write(line.encode() + b"\n")
            except Exception as exc:  # a dead call: the session sees the stream end
                process.failure = process.failure or f"its stdin failed: {exc}"
                await to_session.aclose()

        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                group.cancel_scope.cancel()


async def _read_output(
    events: AsyncGenerator[ExecEvent, None],
    process: ServerProcess,
    to_session: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Turn the call's stdout into messages (one per line), keep its stderr's tail, and
    note how it ended; the session's read stream closes when the call ends."""
    buffer = b""
    async with aclosing(events) as stream:
        async for event in stream:
            if isinstance(event, OutputEvent):
                process.output_bytes += len(event.data)
                if process.capped:
                    process.failure = (
                        f"its output reached the box's max_output_bytes ({process.output_cap} "
                        "bytes for a call, the server's whole life), past which the box drops "
                        "it; raise the blueprint's box.max_output_bytes"
                    )
                    return
                if event.type == "stderr":
                    process.feed_stderr(event.data)
                    continue
                *lines, buffer = (buffer + event.data).split(b"\n")
                if len(buffer) > MAX_LINE_BYTES:
                    process.failure = f"it wrote a line longer than {MAX_LINE_BYTES} bytes"
                    return
                for line in lines:
                    if line.strip():
                        await to_session.send(_parse(line))
            elif isinstance(event, ErrorEvent):
                process.failure = f"it could not start: {event.message}"
            elif isinstance(event, ExitEvent):
                process.exit = event


def _parse(line: bytes) -> SessionMessage | Exception:
    """One stdout line as a message, or the parse error (the session reports it)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)
