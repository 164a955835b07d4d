"""One MCP server's connection for a run: started on first use, its tools listed once, its
calls bounded; a server that cannot start, dies or hangs is broken for the rest of the run
(every later call fails at once with the same reason).

What the server says is shown only as ``shown`` makes it: cleaned (``golem.core.ansi``),
then its credential masked (``golem.core.masking``). Its listing is shown so, every field
of every tool, before a model, a trajectory, an event or a person sees any of it; only a
call names a tool by the server's own name."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from mcp import ClientSession, types
from mcp.client._transport import TransportStreams
from mcp.shared.exceptions import MCPError

from golem.context.toolshed.box_stdio import ServerProcess
from golem.core.ansi import clean
from golem.core.errors import ToolshedError
from golem.core.masking import SecretMasker, mask_fields
from golem.core.toolshed_config import McpServer

__all__ = ["MAX_LISTED_TOOLS", "ListedTool", "ServerConnection"]

MAX_LISTED_TOOLS = 5000
"""More tools than this from one server is refused (a listing that never ends)."""
CLIENT_INFO = types.Implementation(name="golem", version="1")
_BROKEN_CODES = {types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT}


@dataclass(frozen=True)
class ListedTool:
    """A tool of the server's listing: ``name`` is the server's own (what a call and a
    pattern name; never shown), ``shown`` the listing's entry as ``shown`` made it."""

    name: str
    shown: types.Tool


class ServerConnection:
    """A live session with one server, owned by a task of its own (the SDK's streams and
    task groups must be entered and left by the same task)."""

    def __init__(
        self,
        server: McpServer,
        transport: Callable[[], AbstractAsyncContextManager[TransportStreams]],
        *,
        process: ServerProcess | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.server = server
        self._transport = transport
        self._process = process
        self._masker = SecretMasker(list(secrets))
        self._session: ClientSession | None = None
        self._tools: list[ListedTool] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._start_error: BaseException | None = None
        self.broken: str | None = None

    @property
    def restartable(self) -> bool:
        """Broken only because its stdio output reached the box's cap: a new process
        starts afresh (what the old one kept in memory is lost)."""
        return self.broken is not None and self._process is not None and self._process.capped

    def shown(self, text: str) -> str:
        """What the server said, safe to show: cleaned, then without the server's credential
        (an answer or a listing may echo it; cleaned first, so that no invisible character
        inside the credential hides it from the masker)."""
        text = clean(text)
        return self._masker.mask_text(text) if self._masker else text

    async def tools(self) -> list[ListedTool]:
        """The server's tools, listed once (the server started on the first call)."""
        if self._tools is None:
            await self._connect()
        if self._tools is None:
            raise self._failed()
        return self._tools

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call a tool within ``call_timeout``; ToolshedError when the server is (or
        becomes) broken, MCPError for an error the server answered with."""
        if self.restartable:
            await self._restart()
        await self.tools()
        session = self._session
        if self.broken is not None or session is None:
            raise self._failed()
        timeout = self.server.call_timeout
        try:
            async with asyncio.timeout(timeout + 1):
                return await session.call_tool(name, arguments, read_timeout_seconds=timeout)
        except TimeoutError:
            await self._break(f"the call of {name} did not end within {timeout:g}s")
        except MCPError as exc:
            if exc.code not in _BROKEN_CODES:
                raise
            what = "timed out" if exc.code == types.REQUEST_TIMEOUT else "lost the connection"
            timing = f" after {timeout:g}s" if exc.code == types.REQUEST_TIMEOUT else ""
            await self._break(f"the call of {name} {what}{timing}")
        raise self._failed()

    async def close(self) -> None:
        """End the session (and a stdio server's process)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            if self._session is None:
                task.cancel()  # still starting (or stuck starting): nothing to wind down
            with contextlib.suppress(asyncio.CancelledError, Exception):
                async with asyncio.timeout(self.server.connect_timeout):
                    await task
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _restart(self) -> None:
        """A new process for a server whose output reached the box's cap (its tools stay
        as listed)."""
        await self.close()
        assert self._process is not None
        self._process.reset()
        self.broken, self._start_error, self._session = None, None, None
        self._ready, self._stop = asyncio.Event(), asyncio.Event()
        await self._connect()

    async def _connect(self) -> None:
        if self.broken is not None:
            return
        if self._task is None:
            self._task = asyncio.create_task(self._serve(), name=f"toolshed-{self.server.name}")
        try:
            async with asyncio.timeout(self.server.connect_timeout):
                await self._ready.wait()
        except TimeoutError:
            await self._break(
                f"it did not start and list its tools within {self.server.connect_timeout:g}s "
                "(connect_timeout)"
            )
            return
        if self._session is None and self.broken is None:
            self.broken = f"it could not start: {_describe(self._start_error)}"

    async def _serve(self) -> None:
        try:
            async with (
                self._transport() as (read, write),
                ClientSession(read, write, client_info=CLIENT_INFO) as session,
            ):
                await session.initialize()
                self._tools = [
                    ListedTool(tool.name, mask_fields(tool, self.shown))
                    for tool in await _list_tools(session)
                ]
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:
            self._start_error = exc
        finally:
            self._session = None
            self._ready.set()

    async def _break(self, reason: str) -> None:
        """Mark the server broken and stop it (a hung server is not left running)."""
        self.broken = reason
        await self.close()

    def _failed(self) -> ToolshedError:
        """The error every call gets once the server is broken: which server, what
        happened, how its process ended and its stderr's tail."""
        message = f"toolshed server {self.server.name!r} is unavailable for this run: {self.broken}"
        process = self._process
        if process is not None:
            if (ended := process.ended()) is not None:
                message += f"; {ended}"
            if tail := process.tail():
                message += f"\nits stderr ends with:\n{tail}"
        return ToolshedError(self.shown(message))


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    """Every page of the server's tool listing, at most ``MAX_LISTED_TOOLS`` tools."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        if len(tools) > MAX_LISTED_TOOLS:
            raise ToolshedError(f"it lists more than {MAX_LISTED_TOOLS} tools")
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(error: BaseException | None) -> str:
    """The first real error inside (exception groups unwrapped)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if error is None:
        return "it ended before listing its tools"
    if isinstance(error, ToolshedError):
        return error.message
    if isinstance(error, MCPError) and error.code == types.CONNECTION_CLOSED:
        return "it closed the connection before listing its tools"
    if isinstance(error, MCPError):
        return f"it answered with an error: {error.message}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
