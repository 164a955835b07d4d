"""A step's MCP gateway: the tools an agent step was given, served as one streamable-HTTP
MCP server on this host's loopback, for an external CLI agent in the box to call.

golem, not the CLI, decides what the CLI may call: only the tools handed to the gateway
exist on it, and a call to any other name is refused. Each tool runs as it would for
golem's own agent (``Tool.run(box, arguments)``), its result masked with the box's
secrets. The gateway answers only requests that carry its random bearer token, which the
box never holds: the box reaches the gateway through a route of its egress proxy that
puts the token in (``LocalBox.host_route``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from golem.agent.contracts import Tool
from golem.sandbox import Box

__all__ = ["Gateway", "serve_tools", "tools_for_box"]

MCP_PATH = "/mcp"
STOP_GRACE = 2
"""Seconds a call still running when the step ends may take before it is cancelled (the
CLI that made it is gone)."""


@dataclass(frozen=True)
class Gateway:
    """A running gateway: where it listens (loopback) and the token it asks for."""

    url: str
    token: str
    tools: list[str]


@contextlib.asynccontextmanager
async def serve_tools(tools: Sequence[Tool], box: Box) -> AsyncIterator[Gateway]:
    """Serve ``tools`` (run in ``box``) on 127.0.0.1 at an ephemeral port for as long as
    the block lasts."""
    token = secrets.token_urlsafe(32)
    manager = StreamableHTTPSessionManager(
        app=_server(tools, box),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    listener = _loopback_listener()
    port = int(listener.getsockname()[1])
    config = uvicorn.Config(
        _Guarded(manager, token),
        lifespan="off",
        log_config=None,  # the process's logging (golem serve's own uvicorn's) left alone
        log_level=None,
        access_log=False,
        timeout_graceful_shutdown=STOP_GRACE,
    )
    server = _QuietServer(config)
    async with manager.run():
        serving = asyncio.create_task(server.serve(sockets=[listener]))
        try:
            yield Gateway(f"http://127.0.0.1:{port}{MCP_PATH}", token, [t.spec.name for t in tools])
        finally:
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await serving
            listener.close()


@contextlib.asynccontextmanager
async def tools_for_box(tools: Sequence[Tool], box: Box) -> AsyncIterator[str]:
    """``tools`` served to ``box`` while the block lasts: yields the URL at which a client
    in the box (an external CLI agent) finds them as one MCP server. ConfigError when the
    box cannot reach a service of golem's (see ``Box.host_route``)."""
    async with serve_tools(tools, box) as gateway:
        with box.host_route(gateway.url, gateway.token) as url:
            yield url


def _server(tools: Sequence[Tool], box: Box) -> Server[Any]:
    by_name = {tool.spec.name: tool for tool in tools}
    listed = [
        types.Tool(name=t.spec.name, description=t.spec.description, input_schema=t.spec.parameters)
        for t in tools
    ]

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        _ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _text(
                f"no tool {params.name!r} here: this step has {', '.join(by_name) or 'none'}",
                error=True,
            )
        try:
            result = await tool.run(box, dict(params.arguments or {}))
        except Exception as exc:  # a tool's crash is the CLI's observation, as for golem's agent
            return _text(box.mask(f"the tool failed: {type(exc).__name__}: {exc}"), error=True)
        return _text(box.mask(result.output), error=result.is_error)

    return Server("golem", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str, *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class _Guarded:
    """The MCP endpoint, for requests with the gateway's bearer token only."""

    def __init__(self, manager: StreamableHTTPSessionManager, token: str) -> None:
        self._manager = manager
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if not hmac.compare_digest(given, self._expected):
            await _answer(send, 401, b"golem's MCP gateway: missing or wrong bearer token\n")
            return
        if scope["path"].rstrip("/") != MCP_PATH:
            await _answer(send, 404, b"golem's MCP gateway answers at /mcp\n")
            return
        await self._manager.handle_request(scope, receive, send)


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _QuietServer(uvicorn.Server):
    """uvicorn serving inside golem's loop: it leaves the process's signals alone."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _loopback_listener() -> socket.socket:
    # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY only on sockets that say so, and
    # without it each answer waits ~40 ms for a delayed ACK (Nagle)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.setblocking(False)
    return listener
