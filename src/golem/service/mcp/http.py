"""``/mcp`` on ``golem serve``: the SDK's streamable-HTTP transport, stateless (any worker
answers any request), behind the REST API's own key check. The transport starts with the
first request to ``/mcp``: the MCP SDK is a quarter of what the server imports, and a
server nobody asks over MCP never needs it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from golem.core.errors import GolemError
from golem.service.api.deps import authenticated, presented_key
from golem.service.problems import problem_of
from golem.service.state import ServerState

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["McpTransport", "mount_mcp", "serving_mcp"]

PATH = "/mcp"


class McpTransport:
    """The MCP server's transport for one server's requests, started by the first of them
    and run until ``close``."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._started: asyncio.Future[StreamableHTTPSessionManager] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def manager(self) -> StreamableHTTPSessionManager:
        """The running transport (started now if no request has started it yet, or if its
        start failed). A request that leaves while it starts leaves it starting."""
        started = self._started
        if started is None or (started.done() and started.exception() is not None):
            started = self._started = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(started))
        return await asyncio.shield(started)

    async def _serve(self, ready: asyncio.Future[StreamableHTTPSessionManager]) -> None:
        """Run the transport (its task group holds the requests' tasks) until closed; a
        start that fails fails the requests waiting for it (the next one tries again)."""
        try:
            from mcp.server.transport_security import (  # noqa: PLC0415 - lazy
                TransportSecuritySettings,
            )

            from golem.service.mcp.host import Host  # noqa: PLC0415 - lazy
            from golem.service.mcp.server import golem_mcp  # noqa: PLC0415 - lazy

            server = golem_mcp(Host(self._state))
            # A bearer key is needed for every request, so a page in a browser (what
            # DNS-rebinding protection guards against) cannot call it: the Host header of a
            # proxied server is free.
            server.streamable_http_app(
                stateless_http=True,
                json_response=True,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            )
            manager = server.session_manager
            async with manager.run():
                ready.set_result(manager)
                await self._closing.wait()
        except Exception as exc:
            if ready.done():
                raise
            ready.set_exception(exc)

    async def close(self) -> None:
        """Stop the transport (its requests' tasks are cancelled), if it was started."""
        self._closing.set()
        if self._task is not None:
            await self._task


@asynccontextmanager
async def serving_mcp(app: FastAPI, state: ServerState) -> AsyncIterator[None]:
    """The MCP server's transport for ``app``'s requests, while the block runs."""
    transport = McpTransport(state)
    app.state.mcp = transport
    try:
        yield
    finally:
        await transport.close()


class _Endpoint:
    """``/mcp``: the caller's key checked as every route checks it, then the transport."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope["app"]
        state: ServerState = app.state.golem
        try:
            principal = await authenticated(state, presented_key(Headers(scope=scope)))
        except GolemError as exc:
            await problem_of(exc)(scope, receive, send)
            return
        transport: McpTransport = app.state.mcp
        manager = await transport.manager()
        from golem.service.mcp.host import PRINCIPAL_KEY  # noqa: PLC0415 - with the transport

        scope[PRINCIPAL_KEY] = principal
        await manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI) -> None:
    """Route ``/mcp`` of ``app`` to golem's MCP server."""
    route = Route(PATH, _Endpoint(), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    app.router.routes.append(route)
