"""How large a request may be: bodies by the caller's role, counted as they arrive.

``BodyLimit`` is an ASGI middleware. A body declared (Content-Length) or found (chunked,
counted as it is read) larger than the role's ``max_body_bytes``, or for a file or archive
upload ``max_upload_bytes``, is answered 413 with a problem naming the option; nothing past
the limit is read. A request without a valid key is held to the ``user`` role's limits.
WebSocket messages are capped by uvicorn (``ws_max_size``) and then by role, in
``api/sockets.py`` (for the call channel and interactive calls alike).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from golem.core.config import GolemConfig
from golem.core.errors import GolemError, Problem
from golem.core.server_config import RolePolicy
from golem.core.sizes import format_size
from golem.service.api.deps import principal_from_headers
from golem.service.problems import problem, problem_of
from golem.service.state import ServerState

__all__ = ["BodyLimit", "ws_max_size"]

UPLOAD = re.compile(r"^/v1/sessions/[^/]+/(files|archive)$")
"""Routes whose body is a file or an archive, streamed into a box."""
ANONYMOUS_ROLE = "user"


def ws_max_size(config: GolemConfig) -> int:
    """The largest WebSocket message any role may send (uvicorn's ``ws_max_size``)."""
    return max(policy.max_body_bytes for policy in config.server.policies.values())


@dataclass(frozen=True)
class _Limit:
    size: int | None
    option: str

    def refusal(self, size: int | None) -> Problem:
        assert self.size is not None
        seen = f"of {format_size(size)} " if size is not None else ""
        return Problem(
            413,
            f"the request's body {seen}is over {format_size(self.size)} ({self.option}); "
            "send less, in several requests, or ask for a role that allows more",
        )


class BodyLimit:
    """Refuse request bodies over the caller's role's limit with 413."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if scope["method"] in ("GET", "HEAD") or (
            declared is not None and declared <= _floor(scope)
        ):  # no body (a GET's is never read), or one within every role's limits
            await self.app(scope, receive, send)
            return
        try:
            limit = await _limit_of(scope)
        except GolemError as exc:  # the key's lookup met a store outage: 503, as a route's
            await problem_of(exc)(scope, receive, send)
            return
        if limit.size is None:
            await self.app(scope, receive, send)
            return
        if declared is not None and declared > limit.size:
            await _answer(limit.refusal(declared), scope, send)
            return
        await _Counted(self.app, limit)(scope, receive, send)


class _Counted:
    """One request whose body is counted as the app reads it."""

    def __init__(self, app: ASGIApp, limit: _Limit) -> None:
        self.app = app
        self.limit = limit
        self.size = 0
        self.over = False
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.size += len(message.get("body", b""))
                if self.limit.size is not None and self.size > self.limit.size:
                    self.over = True
                    raise self.limit.refusal(None)
            return message

        async def guarded(message: Message) -> None:
            # The app may have turned the refusal into an answer of its own (a 400 for a
            # body it could not read): the 413 goes out instead.
            if message["type"] == "http.response.start":
                if self.over:
                    await _answer(self.limit.refusal(None), scope, send)
                self.started = True
            if not self.over:
                await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Problem:
            if not self.over or self.started:
                raise
            await _answer(self.limit.refusal(None), scope, send)


def _floor(scope: Scope) -> int:
    """The size of body every role may send (h11 holds a body to its Content-Length)."""
    state: ServerState = scope["app"].state.golem
    limits = [
        limit
        for policy in state.config.server.policies.values()
        for limit in (policy.max_body_bytes, policy.max_upload_bytes)
        if limit is not None
    ]
    return min(limits)


async def _limit_of(scope: Scope) -> _Limit:
    state: ServerState = scope["app"].state.golem
    role = await _role(scope, state)
    policy: RolePolicy = state.config.server.policies[role]
    option = f"server.policies.{role}"
    if scope["method"] == "PUT" and UPLOAD.match(scope["path"]):
        return _Limit(policy.max_upload_bytes, f"{option}.max_upload_bytes")
    return _Limit(policy.max_body_bytes, f"{option}.max_body_bytes")


async def _role(scope: Scope, state: ServerState) -> str:
    principal = await principal_from_headers(state, Headers(scope=scope))
    return principal.role if principal is not None else ANONYMOUS_ROLE


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer(refusal: Problem, scope: Scope, send: Send) -> None:
    response = problem(413, "Content Too Large", refusal.message, kind="Problem")
    response.headers["Connection"] = "close"

    async def nothing() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, nothing, send)
