"""Dependencies of every route: the server's state, and who the request acts for.

They are ``async`` so that FastAPI runs them on the event loop rather than handing each to
a worker thread; a key not seen in the last seconds is looked up in the database on a
worker thread, so the loop never waits on it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from golem.core.errors import Problem
from golem.service.keys import Principal
from golem.service.state import ServerState

__all__ = [
    "Admin",
    "Caller",
    "State",
    "caller",
    "principal_from_headers",
    "principal_of",
    "server_state",
    "while_connected",
]

T = TypeVar("T")

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
    bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
    presented = bearer or headers.get("x-golem-key", "")
    return await principal_of(state, presented) if presented else None


async def caller(
    state: State,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
) -> Principal:
    """The principal of the request's key; 401 without a valid one."""
    presented = bearer.credentials if bearer is not None else header
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


async def while_connected(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, or, when the client disconnects first, ``work`` cancelled (so
    that what it made is rolled back: a box made for nobody) and a 400 nobody reads."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if task.cancelled():
        raise Problem(400, "the client disconnected before its answer was ready")
    return task.result()


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (its body was read: nothing else arrives before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
