"""An MCP server's tool as one of the agent's tools: its name as the model sees it, its
description and input schema from the server's listing as shown (cleaned and masked);
its result as text, bounded, cleaned and without the server's credential."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError

from golem.agent.contracts import ToolResult
from golem.agent.messages import ToolSpec
from golem.context.toolshed.connection import ListedTool, ServerConnection
from golem.core.errors import ToolshedError
from golem.sandbox import Box

__all__ = ["MAX_DESCRIPTION_CHARS", "ToolshedTool", "render_result"]

MAX_DESCRIPTION_CHARS = 4000
"""A tool's description past this is cut (it is read by the model on every turn)."""
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ToolshedTool:
    """One tool of one server, offered to the model under ``spec.name``."""

    def __init__(self, connection: ServerConnection, tool: ListedTool, name: str) -> None:
        self.connection = connection
        self.tool = tool.name
        self.spec = ToolSpec(
            name=name,
            description=_description(connection.server.name, tool.shown),
            parameters=_schema(tool.shown.input_schema),
        )

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        """Call the tool on its server (the server's own box for a stdio one, so ``box``
        is not used); any failure is a result the model reads."""
        del box
        connection = self.connection
        try:
            result = await connection.call(self.tool, arguments)
        except ToolshedError as exc:
            return ToolResult(exc.message, is_error=True)
        except MCPError as exc:
            text = f"{connection.server.name}.{self.tool} failed: {exc.message}"
            return ToolResult(connection.shown(text), is_error=True)
        limit = int(connection.server.max_result_bytes)
        return ToolResult(connection.shown(render_result(result, limit)), is_error=result.is_error)


def render_result(result: types.CallToolResult, limit: int) -> str:
    """The result's content as text (what is not text described), at most ``limit`` bytes
    (clipped with a note)."""
    parts = [_content_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    data = text.encode()
    if len(data) <= limit:
        return text
    kept = data[:limit].decode(errors="ignore")
    return (
        f"{kept}\n[clipped: the result was {len(data)} bytes; this server's max_result_bytes "
        f"is {limit}]"
    )


def _content_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, types.ResourceLink):
        return f"[resource {block.uri}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        mime = resource.mime_type or "binary"
        return f"[{mime} resource {resource.uri}, {_decoded_size(resource.blob)} bytes]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _description(server: str, tool: types.Tool) -> str:
    text = tool.description or tool.title or tool.name
    text = f"[{server}.{tool.name}] {text}"
    if len(text) > MAX_DESCRIPTION_CHARS:
        return text[:MAX_DESCRIPTION_CHARS] + " [description cut]"
    return text


def _schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The tool's input schema; providers want an object schema."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return dict(EMPTY_SCHEMA)
    return schema
