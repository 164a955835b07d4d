"""The official MCP SDK's client, connected to golem: over streamable HTTP to a real
`golem serve`'s /mcp with an API key, or over stdio to `golem mcp` as a subprocess."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

TOOLS = {  # golem's MCP tools, by name
    "box_open", "box_exec", "box_read_file", "box_write_file", "box_close", "box_list",
    "run_start", "run_status", "run_events", "run_approve", "run_reject", "run_pr",
    "run_list", "run_cancel",
}  # fmt: skip


@asynccontextmanager
async def over_http(url: str, key: str | None) -> AsyncIterator[Client]:
    """A client of ``url``/mcp presenting ``key`` as its bearer token."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, cache=None) as client:
            yield client


@asynccontextmanager
async def over_stdio(env: dict[str, str], config: Path) -> AsyncIterator[Client]:
    """A client of `golem mcp --config config`, started with ``env``."""
    command = [sys.executable, "-m", "golem", "mcp", "--config", str(config)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with Client(params, cache=None) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    """The text a tool answered."""
    return "".join(part.text for part in result.content if isinstance(part, TextContent))


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """A tool's structured answer; AssertionError with its text when it is an error."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult), result
    assert not result.is_error, text_of(result)
    structured = result.structured_content
    if structured is not None and set(structured) == {"result"}:
        return structured["result"]
    return structured if structured is not None else json.loads(text_of(result))


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The error text of a tool call that must fail."""
    result = await client.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult), result
    assert result.is_error, result
    return text_of(result)
