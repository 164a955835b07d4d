"""A step's MCP gateway, called with the official SDK's client over streamable HTTP: it
lists exactly the tools it was given, runs them in the real box, masks the box's secrets
and refuses other names and requests without its token."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from golem.agent import ToolResult, ToolSpec, make_tools
from golem.context.toolshed.gateway import Gateway, serve_tools
from golem.sandbox import Box, Engine

pytestmark = pytest.mark.bwrap

SECRET = "s3cr3t-value-of-the-box-0123456789"  # noqa: S105 - the secret the box must mask


@pytest.fixture
async def secret_box(engine: Engine) -> AsyncIterator[Box]:
    async with engine.session(engine.spec(secrets={"TOKEN": SECRET})) as box:
        await box.put_file("/workspace/notes.txt", f"the key is {SECRET}\nline two\n")
        yield box


@contextlib.asynccontextmanager
async def _client(gateway: Gateway) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {gateway.token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(gateway.url, http_client=http)) as client,
    ):
        yield client


async def test_the_gateway_lists_and_runs_only_its_tools_with_secrets_masked(
    secret_box: Box,
) -> None:
    async with (
        serve_tools(make_tools(["read", "ls"]), secret_box) as gateway,
        _client(gateway) as client,
    ):
        listed = await client.list_tools()
        assert sorted(tool.name for tool in listed.tools) == ["ls", "read"]
        schema = next(t for t in listed.tools if t.name == "read").input_schema
        assert "path" in schema["properties"]

        read = await client.call_tool("read", {"path": "notes.txt"})
        text = read.content[0].text  # type: ignore[union-attr]
        assert not read.is_error
        assert "line two" in text
        assert SECRET not in text
        assert "***" in text

        refused = await client.call_tool("bash", {"command": "id"})
        assert refused.is_error
        assert "no tool 'bash'" in refused.content[0].text  # type: ignore[union-attr]


async def test_the_gateway_refuses_a_request_without_its_token(secret_box: Box) -> None:
    async with serve_tools(make_tools(["read"]), secret_box) as gateway:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        async with httpx2.AsyncClient() as http:
            bare = await http.post(gateway.url, json=body)
            wrong = await http.post(
                gateway.url, json=body, headers={"Authorization": "Bearer guessed"}
            )
        assert bare.status_code == 401
        assert wrong.status_code == 401


class _Crashing:
    """A tool whose run raises, with the box's secret in its message."""

    spec = ToolSpec(name="crash", description="Raises.", parameters={"type": "object"})

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError(f"could not reach the tracker with {SECRET}")


async def test_a_tool_that_crashes_is_a_masked_tool_error(secret_box: Box) -> None:
    async with serve_tools([_Crashing()], secret_box) as gateway, _client(gateway) as client:
        crashed = await client.call_tool("crash", {})
    text = crashed.content[0].text  # type: ignore[union-attr]
    assert crashed.is_error
    assert text.startswith("the tool failed: RuntimeError: could not reach the tracker")
    assert SECRET not in text


class _Hanging:
    """A tool that never answers; ``entered`` is set once a call is inside it."""

    spec = ToolSpec(name="hang", description="Never answers.", parameters={"type": "object"})

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        self.entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest.mark.timeout(60)
async def test_the_gateway_stops_with_a_call_still_running(secret_box: Box) -> None:
    hanging = _Hanging()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang"}}
    async with httpx2.AsyncClient(timeout=None) as http:
        async with serve_tools([hanging], secret_box) as gateway:
            headers = {
                "Authorization": f"Bearer {gateway.token}",
                "Accept": "application/json, text/event-stream",
            }
            call = asyncio.create_task(http.post(gateway.url, json=body, headers=headers))
            await hanging.entered.wait()
        # the block was left with a call inside the tool: the call ends, unanswered
        [ended] = await asyncio.gather(call, return_exceptions=True)
        assert isinstance(ended, httpx2.HTTPError) or ended.status_code >= 500
        with pytest.raises(httpx2.ConnectError):
            await http.post(gateway.url, json=body, headers=headers)


async def test_the_gateway_leaves_the_processs_logging_alone(secret_box: Box) -> None:
    before = {name: logging.getLogger(name).level for name in ("uvicorn", "uvicorn.error")}
    handlers = list(logging.getLogger("uvicorn").handlers)
    async with serve_tools(make_tools(["read"]), secret_box):
        pass
    assert {name: logging.getLogger(name).level for name in before} == before
    assert logging.getLogger("uvicorn").handlers == handlers
