"""The toolshed: MCP servers whose tools agent steps are given, a curated subset each.

The selection names load at once (blueprints parse patterns); the rest, which loads the
MCP SDK, on first use, so commands that never connect a server start fast."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from golem.context.toolshed.selection import ToolPattern, check_patterns, parse_patterns, wire_name

if TYPE_CHECKING:
    from golem.context.toolshed.adapter import ToolshedTool, render_result
    from golem.context.toolshed.box_stdio import ServerProcess, box_stdio
    from golem.context.toolshed.budget import fit_context, schema_tokens
    from golem.context.toolshed.connection import ListedTool, ServerConnection
    from golem.context.toolshed.http import HttpAccess, check_egress, http_access, http_transport
    from golem.context.toolshed.shed import Toolshed

__all__ = [
    "HttpAccess",
    "ListedTool",
    "ServerConnection",
    "ServerProcess",
    "ToolPattern",
    "Toolshed",
    "ToolshedTool",
    "box_stdio",
    "check_egress",
    "check_patterns",
    "fit_context",
    "http_access",
    "http_transport",
    "parse_patterns",
    "render_result",
    "schema_tokens",
    "wire_name",
]

_LAZY = {
    "ToolshedTool": "adapter",
    "render_result": "adapter",
    "ServerProcess": "box_stdio",
    "box_stdio": "box_stdio",
    "fit_context": "budget",
    "schema_tokens": "budget",
    "ListedTool": "connection",
    "ServerConnection": "connection",
    "HttpAccess": "http",
    "check_egress": "http",
    "http_access": "http",
    "http_transport": "http",
    "Toolshed": "shed",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
