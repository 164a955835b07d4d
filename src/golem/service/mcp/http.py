"""``/mcp`` on ``golem serve``: the SDK's streamable-HTTP transport, stateless (any worker
answers any request), behind the REST API's own key check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from golem.core.errors import GolemError
from golem.service.api.deps import authenticated, presented_key
from golem.service.mcp.host import PRINCIPAL_KEY, Host
from golem.service.mcp.server import golem_mcp
from golem.service.problems import problem_of
from golem.service.state import ServerState

__all__ = ["mount_mcp", "serving_mcp"]

PATH = "/mcp"


@asynccontextmanager
async def serving_mcp(app: FastAPI, state: ServerState) -> AsyncIterator[None]:
    """The MCP server's transport for ``app``'s requests, while the block runs."""
    server = golem_mcp(Host(state))
    # A bearer key is needed for every request, so a page in a browser (what DNS-rebinding
    # protection guards against) cannot call it: the Host header of a proxied server is free.
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    async with manager.run():
        app.state.mcp = manager
        yield


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
        scope[PRINCIPAL_KEY] = principal
        manager: StreamableHTTPSessionManager = app.state.mcp
        await manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI) -> None:
    """Route ``/mcp`` of ``app`` to golem's MCP server."""
    route = Route(PATH, _Endpoint(), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    app.router.routes.append(route)
