"""What a tool call acts with: the server's state and the caller's principal, and how a
golem error becomes the tool error an MCP client reads."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from golem.core.errors import GolemError, Problem
from golem.service.keys import Principal
from golem.service.state import ServerState

__all__ = ["PRINCIPAL_KEY", "Host", "acting", "tool"]

PRINCIPAL_KEY = "golem.principal"
"""Where ``/mcp`` leaves the principal its key authenticated, in the request's ASGI scope."""

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Host:
    """The MCP server's side of golem: the state, and the principal of a stdio server
    (None over HTTP, where each request brings its own)."""

    state: ServerState
    local: Principal | None = None


def acting(ctx: Context) -> tuple[ServerState, Principal]:
    """The state, and the principal this tool call acts for."""
    context = ctx.request_context
    host: object = context.lifespan_context
    if not isinstance(host, Host):
        raise TypeError("golem's tools run on golem_mcp's server only")
    request = context.request
    scope: dict[str, Any] = getattr(request, "scope", {}) if request is not None else {}
    principal = scope.get(PRINCIPAL_KEY, host.local)
    if not isinstance(principal, Principal):  # /mcp authenticates first: never reached
        raise Problem(401, "an API key is needed: send Authorization: Bearer <key>")
    return host.state, principal


def tool(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """A tool whose golem errors (and invalid values) reach the client as a tool error
    with the REST API's status and message, never as a crash of the session."""

    @functools.wraps(fn)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await fn(*args, **kwargs)
        except GolemError as exc:
            raise ToolError(f"{exc.http_status} {type(exc).__name__}: {exc.message}") from None
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'value'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ToolError(f"422 InvalidRequest: {problems}") from None

    return guarded
