"""The MCP server golem is: its tools, on the official SDK's MCPServer."""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from golem import __version__
from golem.service.mcp.boxes import BOX_TOOLS
from golem.service.mcp.host import Host
from golem.service.mcp.runs import RUN_TOOLS

__all__ = ["DESTRUCTIVE", "INSTRUCTIONS", "READ_ONLY", "golem_mcp"]

INSTRUCTIONS = """golem runs code in isolated boxes and runs coding agents that end in pull
requests. Boxes: box_open, then box_exec / box_read_file / box_write_file with its box_id,
then box_close. Runs: run_start (repo and task or issue), then follow it with run_events
(after=next_after, wait=seconds) or run_status; answer a gate with run_approve or
run_reject; fetch its pull request with run_pr."""


READ_ONLY = frozenset(
    {"box_list", "box_read_file", "run_status", "run_events", "run_pr", "run_list"}
)
"""Tools a client may call without asking its user: they change nothing."""
DESTRUCTIVE = frozenset({"box_close", "run_cancel", "run_reject"})
"""Tools that end or refuse something for good."""


def golem_mcp(host: Host) -> MCPServer[Host]:
    """golem's tools, acting on ``host``."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Host]) -> AsyncIterator[Host]:
        yield host

    with _logging_untouched():
        server: MCPServer[Host] = MCPServer(
            "golem", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan
        )
    for function in (*BOX_TOOLS, *RUN_TOOLS):
        name = function.__name__
        hints = ToolAnnotations(
            read_only_hint=name in READ_ONLY, destructive_hint=name in DESTRUCTIVE
        )
        server.add_tool(function, description=_one_paragraph(function), annotations=hints)
    return server


@contextmanager
def _logging_untouched() -> Iterator[None]:
    """MCPServer() configures the root logger (a Rich handler that wraps lines, at INFO)
    when nothing has; golem's log stays as the server or CLI set it up."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _one_paragraph(function: Callable[..., object]) -> str:
    """A tool's docstring as the client shows it: one paragraph, no source indentation."""
    return " ".join((inspect.getdoc(function) or "").split())
