"""The toolshed: MCP servers whose tools agent steps are given, a curated subset each."""

from golem.context.toolshed.adapter import ToolshedTool, render_result
from golem.context.toolshed.box_stdio import ServerProcess, box_stdio
from golem.context.toolshed.budget import fit_context, schema_tokens
from golem.context.toolshed.connection import ServerConnection
from golem.context.toolshed.http import HttpAccess, check_egress, http_access, http_transport
from golem.context.toolshed.selection import ToolPattern, check_patterns, parse_patterns, wire_name
from golem.context.toolshed.shed import Toolshed

__all__ = [
    "HttpAccess",
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
