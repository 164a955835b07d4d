"""Dependencies of every route: the server's state, and who the request acts for.

They are ``async`` so that FastAPI runs them on the event loop rather than handing each to
a worker thread; a key not seen in the last seconds is looked up in the database on a
worker thread, so the loop never waits on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from golem.core.errors import Problem
from golem.service.keys import Principal
from golem.service.state import ServerState

__all__ = [
    "Admin",
    "Caller",
    "State",
    "authenticated",
    "caller",
    "presented_key",
    "principal_from_headers",
    "principal_of",
    "server_state",
]

_bearer = HTTPBearer(auto_error=False, description="An API key: Authorization: Bearer <key>")
_header = APIKeyHeader(name="X-Golem-Key", auto_error=False, description="Or the key here.")


async def server_state(request: Request) -> ServerState:
    """The server's state (``app.state.golem``)."""
    state: ServerState = request.app.state.golem
    return state


State = Annotated[ServerState, Depends(server_state)]


async def principal_of(state: ServerState, presented: str) -> Principal | None:
    """The principal of a presented key (None: unknown, wrong or revoked); a key not seen
    lately is looked up in the store."""
    return state.keys.known(presented) or await state.keys.authenticate(presented)


async def principal_from_headers(
    state: ServerState, headers: Mapping[str, str]
) -> Principal | None:
    """The principal of the key a request's headers present (``Authorization: Bearer`` or
    ``X-Golem-Key``), for code outside a route's dependencies (middleware, WebSockets)."""
    presented = presented_key(headers)
    return await principal_of(state, presented) if presented else None


def presented_key(headers: Mapping[str, str]) -> str:
    """The key a request's headers present (``Authorization: Bearer`` or ``X-Golem-Key``;
    "" for none)."""
    bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
    return bearer or headers.get("x-golem-key", "")


async def caller(
    state: State,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
) -> Principal:
    """The principal of the request's key; 401 without a valid one."""
    return await authenticated(state, bearer.credentials if bearer is not None else header)


async def authenticated(state: ServerState, presented: str | None) -> Principal:
    """The principal of a presented key; 401 without a valid one (every route, and
    ``/mcp``)."""
    challenge = {"WWW-Authenticate": 'Bearer realm="golem"'}
    if not presented:
        raise Problem(
            401, "an API key is needed: send Authorization: Bearer <key>", headers=challenge
        )
    principal = await principal_of(state, presented)
    if principal is None:
        raise Problem(401, "the API key is not valid, or was revoked", headers=challenge)
    return principal


Caller = Annotated[Principal, Depends(caller)]


async def admin(principal: Caller) -> Principal:
    """Only the admin role may pass."""
    if principal.role != "admin":
        raise Problem(403, "this needs an admin key (role admin)")
    return principal


Admin = Annotated[Principal, Depends(admin)]
