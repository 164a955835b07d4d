"""How large and how deep a request may be: bodies by the caller's role, counted as they
arrive, and JSON nesting by ``[server] max_json_depth``, measured before any parser reads it.

``BodyLimit`` is an ASGI middleware, the one place every request body passes. A body
declared (Content-Length) or found (chunked, counted as it is read) larger than the role's
``max_body_bytes``, or for a file or archive upload ``max_upload_bytes``, is answered 413
with a problem naming the option; nothing past the limit is read. A request without a valid
key is held to the ``user`` role's limits. Every body but an upload's (bytes for a box, never
parsed) is measured by ``json_depth`` as it arrives and answered 400 past the depth,
whichever route it is for (the API's, the webhooks', ``/mcp``). A client that leaves before
its body is whole is one line in the log, and its route ends as for any disconnect.
WebSocket messages are capped by uvicorn (``ws_max_size``) and then by role and depth, in
``api/sockets.py`` (for the call channel and interactive calls alike).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from golem.core.config import GolemConfig
from golem.core.errors import GolemError, Problem
from golem.core.server_config import RolePolicy
from golem.core.sizes import format_size
from golem.service.api.deps import principal_from_headers
from golem.service.json_depth import JsonDepth, depth_refusal
from golem.service.problems import problem, problem_of
from golem.service.state import ServerState

__all__ = ["BodyLimit", "ws_max_size"]

log = logging.getLogger("golem.service")
UPLOAD = re.compile(r"^/v1/sessions/[^/]+/(files|archive)$")
"""Routes whose body is a file or an archive, streamed into a box."""
ANONYMOUS_ROLE = "user"
TITLES = {400: "Bad Request", 413: "Content Too Large"}


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


UNLIMITED = _Limit(None, "")


class BodyLimit:
    """Refuse request bodies over the caller's role's limit with 413, and bodies nested
    deeper than the server's ``max_json_depth`` with 400."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)  # no body (a GET's is never read)
            return
        declared = _content_length(scope)
        limit = UNLIMITED
        if declared is None or declared > _floor(scope):  # past what every role may send
            try:
                limit = await _limit_of(scope)
            except GolemError as exc:  # the key's lookup met a store outage: 503, as a route's
                await problem_of(exc)(scope, receive, send)
                return
        if declared is not None and limit.size is not None and declared > limit.size:
            await _answer(limit.refusal(declared), scope, send)
            return
        await _Bounded(self.app, limit, _depth_of(scope))(scope, receive, send)


class _Bounded:
    """One request whose body is counted, and measured, as the app reads it."""

    def __init__(self, app: ASGIApp, limit: _Limit, depth: JsonDepth | None) -> None:
        self.app = app
        self.limit = limit
        self.depth = depth
        self.size = 0
        self.whole = False
        self.refused: Problem | None = None
        self.started = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self._take(message)
            elif message["type"] == "http.disconnect" and not self.whole:
                self.whole = True  # said once
                log.warning(
                    "the client of %s %s left after %s of its body",
                    scope["method"],
                    scope["path"],
                    format_size(self.size),
                )
            return message

        async def guarded(message: Message) -> None:
            # The app may have turned the refusal into an answer of its own (a 400 for a
            # body it could not read): the refusal goes out instead.
            if message["type"] == "http.response.start":
                if self.refused is not None:
                    await _answer(self.refused, scope, send)
                self.started = True
            if self.refused is None:
                await send(message)

        try:
            await self.app(scope, bounded, guarded)
        except Problem:
            if self.refused is None or self.started:
                raise
            await _answer(self.refused, scope, send)

    def _take(self, message: Message) -> None:
        """Count and measure a chunk of the body: raise the refusal past a limit."""
        chunk: bytes = message.get("body", b"")
        self.size += len(chunk)
        self.whole = not message.get("more_body", False)
        if self.limit.size is not None and self.size > self.limit.size:
            self.refused = self.limit.refusal(None)
        elif self.depth is not None and not self.depth.feed(chunk):
            self.refused = Problem(400, f"the request's body: {depth_refusal(self.depth.limit)}")
        if self.refused is not None:
            raise self.refused


def _depth_of(scope: Scope) -> JsonDepth | None:
    """The measure of the body's nesting (None: an upload, which is not JSON)."""
    if scope["method"] == "PUT" and UPLOAD.match(scope["path"]):
        return None
    state: ServerState = scope["app"].state.golem
    return JsonDepth(state.config.server.max_json_depth)


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
    status = refusal.http_status
    response = problem(status, TITLES.get(status, "Error"), refusal.message, kind="Problem")
    response.headers["Connection"] = "close"

    async def nothing() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, nothing, send)
