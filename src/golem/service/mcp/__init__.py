"""golem as an MCP server: the REST API's boxes and runs as MCP tools, over streamable
HTTP at ``/mcp`` of ``golem serve`` (the API key as bearer token) and over stdio
(``golem mcp``). Each tool calls the function its REST route calls, as the caller's
principal, so scoping, policy, limits and errors are the REST API's.

The MCP SDK loads with the first use of a tool server (``golem_mcp``, ``serve_stdio`` or a
request to ``/mcp``), not with ``golem serve``'s app."""

from typing import TYPE_CHECKING, Any

from golem.service.mcp.http import mount_mcp, serving_mcp

if TYPE_CHECKING:
    from golem.service.mcp.server import golem_mcp
    from golem.service.mcp.stdio import serve_stdio

__all__ = ["golem_mcp", "mount_mcp", "serve_stdio", "serving_mcp"]

_LAZY = {"golem_mcp": "golem.service.mcp.server", "serve_stdio": "golem.service.mcp.stdio"}
"""Names whose modules import the MCP SDK: imported when first asked for."""


def __getattr__(name: str) -> Any:
    """A tool server's name, its module (and the MCP SDK) imported now (see ``_LAZY``)."""
    if name in _LAZY:
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
