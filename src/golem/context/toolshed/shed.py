"""The run's toolshed: the configured MCP servers, each connected on first use and its
tools listed once; a step gets the tools its patterns choose, as agent tools.

Patterns choose by the server's own tool names; what the model and the messages see is the
listing as shown (``ServerConnection.shown``: cleaned, the credential masked), the wire
name too."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import partial

from golem.agent.contracts import Tool
from golem.context.toolshed.adapter import ToolshedTool
from golem.context.toolshed.box_stdio import ServerProcess, box_stdio
from golem.context.toolshed.connection import ListedTool, ServerConnection
from golem.context.toolshed.http import check_egress, http_access, http_transport
from golem.context.toolshed.selection import (
    WIRE_NAME_LIMIT,
    ToolPattern,
    check_patterns,
    wire_name,
)
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError, ToolshedError
from golem.core.toolshed_config import McpServer
from golem.sandbox import Box

__all__ = ["Toolshed"]


class Toolshed:
    """One per run: its servers' connections, closed at the run's end."""

    def __init__(self, config: GolemConfig) -> None:
        self.config = config
        self._connections: dict[str, tuple[str, ServerConnection]] = {}

    async def tools(self, box: Box, patterns: Sequence[str | ToolPattern]) -> list[Tool]:
        """The tools ``patterns`` choose, for a step working in ``box``. ToolshedError when
        a server cannot be reached or a pattern matches none of its tools."""
        chosen = [p if isinstance(p, ToolPattern) else ToolPattern.parse(p) for p in patterns]
        check_patterns(chosen, self.config.toolshed, "the step's toolshed")
        offered: dict[str, Tool] = {}
        for pattern in chosen:
            connection = await self.connection(box, pattern.server)
            listed = await self.listing(box, pattern.server)
            matched = [tool for tool in listed if pattern.matches(pattern.server, tool.name)]
            if not matched:
                names = ", ".join(tool.shown.name for tool in listed[:200]) or "none"
                raise ToolshedError(
                    f"toolshed pattern {str(pattern)!r} matches none of {pattern.server!r}'s "
                    f"tools ({names}); correct the step's toolshed list"
                )
            for tool in matched:
                if any(_same(t, connection, tool) for t in offered.values()):
                    continue
                name = _unique(wire_name(pattern.server, tool.shown.name), offered, pattern, tool)
                offered[name] = ToolshedTool(connection, tool, name)
        return list(offered.values())

    async def listing(self, box: Box, server: str) -> list[ListedTool]:
        """Every tool ``server`` lists (listed once per run), as shown; ToolshedError if it
        cannot."""
        return await (await self.connection(box, server)).tools()

    async def connection(self, box: Box, name: str) -> ServerConnection:
        """The server's connection (a stdio one: in ``box``; a new box restarts it)."""
        server = self.config.toolshed.server(name)
        if server is None:
            raise ConfigError(f"toolshed server {name!r} is not in [[toolshed.servers]]")
        where = box.id if server.transport == "stdio" else ""
        known = self._connections.get(name)
        if known is not None and known[0] == where:
            return known[1]
        if known is not None:
            await known[1].close()
        connection = await self._connect(box, server)
        self._connections[name] = (where, connection)
        return connection

    async def close(self) -> None:
        """End every server's session (stdio servers' processes stop)."""
        connections, self._connections = self._connections, {}
        for _, connection in connections.values():
            await connection.close()

    async def _connect(self, box: Box, server: McpServer) -> ServerConnection:
        if server.transport == "stdio":
            process = ServerProcess(output_cap=int(box.spec.max_output_bytes))
            return ServerConnection(
                server, partial(box_stdio, box, server, process), process=process
            )
        access = http_access(server, self.config.credentials)
        address = await check_egress(server, box.spec.egress, self.config.engine.network)
        transport = partial(http_transport, server, access, address)
        return ServerConnection(server, transport, secrets=access.secrets)


def _same(offered: Tool, connection: ServerConnection, tool: ListedTool) -> bool:
    """Whether ``offered`` is already this server's ``tool`` (two patterns chose it)."""
    return (
        isinstance(offered, ToolshedTool)
        and offered.connection is connection
        and offered.tool == tool.name
    )


def _unique(name: str, offered: dict[str, Tool], pattern: ToolPattern, tool: ListedTool) -> str:
    """``name``, or, when another tool took it (two tool names that differ only in what
    providers refuse, or in what was masked), a name made unique by a hash of the shown
    name (never of the server's own, which may hold the credential)."""
    seed = f"{pattern.server}.{tool.shown.name}!"
    while name in offered:
        digest = hashlib.sha256(seed.encode()).hexdigest()[:8]
        name, seed = f"{name[: WIRE_NAME_LIMIT - 9]}_{digest}", seed + "!"
    return name
