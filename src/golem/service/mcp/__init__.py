"""golem as an MCP server: the REST API's boxes and runs as MCP tools, over streamable
HTTP at ``/mcp`` of ``golem serve`` (the API key as bearer token) and over stdio
(``golem mcp``). Each tool calls the function its REST route calls, as the caller's
principal, so scoping, policy, limits and errors are the REST API's."""

from golem.service.mcp.http import mount_mcp, serving_mcp
from golem.service.mcp.server import golem_mcp
from golem.service.mcp.stdio import serve_stdio

__all__ = ["golem_mcp", "mount_mcp", "serve_stdio", "serving_mcp"]
