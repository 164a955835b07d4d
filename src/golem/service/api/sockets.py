"""What the API's WebSockets share: the handshake's checks (the key, the session), the
per-role cap and validation of each client message, and closing with a reason."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ValidationError

from golem.core.errors import BadMessage, GolemError
from golem.core.server_config import ServerConfig
from golem.core.sizes import format_size
from golem.sandbox import Box
from golem.service.api.deps import principal_from_headers
from golem.service.json_depth import JsonDepth, depth_refusal
from golem.service.keys import Principal
from golem.service.problems import problem
from golem.service.state import ServerState

__all__ = [
    "BAD_REQUEST",
    "TOO_LARGE",
    "MessageLimit",
    "close_with",
    "open_session_socket",
    "receive",
    "send",
]

BAD_REQUEST = 4400
TOO_LARGE = 4413
CLOSE_REASON = 120  # a close frame's reason holds at most 123 bytes
Message = TypeVar("Message", bound=BaseModel)


@dataclass(frozen=True)
class MessageLimit:
    """The most one client message may hold, the option that sets it, and how deep its
    JSON may nest."""

    size: int
    option: str
    depth: int

    @classmethod
    def of(cls, principal: Principal, server: ServerConfig) -> MessageLimit:
        """The role's ``max_body_bytes`` and the server's ``max_json_depth``, as for an HTTP
        request's body."""
        policy = server.policies[principal.role]
        option = f"server.policies.{principal.role}.max_body_bytes"
        return cls(policy.max_body_bytes, option, server.max_json_depth)


async def open_session_socket(
    websocket: WebSocket,
    state: ServerState,
    session_id: str,
    headers: Callable[[Principal], dict[str, str]] | None = None,
) -> tuple[Principal, Box] | None:
    """The caller and the session's box, once the handshake's key is valid and the session
    is its tenant's; the socket accepted (with ``headers`` for the caller, if given). None
    (the handshake refused) otherwise."""
    principal = await principal_from_headers(state, websocket.headers)
    if principal is None:
        await _deny(
            websocket, 401, "an API key is needed (Authorization: Bearer), or it is not valid"
        )
        return None
    try:
        box = state.sessions.get(principal, session_id).box
    except GolemError as missing:
        await _deny(websocket, missing.http_status, missing.message, kind=type(missing).__name__)
        return None
    extra = headers(principal) if headers is not None else {}
    await websocket.accept(headers=[(k.lower().encode(), v.encode()) for k, v in extra.items()])
    return principal, box


async def receive(websocket: WebSocket, model: type[Message], limit: MessageLimit) -> Message:
    """The client's next message as ``model``; BadMessage when it is not one."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    data: str | bytes = message.get("text") or message.get("bytes") or b""
    raw = data.encode() if isinstance(data, str) else data
    size = len(raw)
    if size > limit.size:
        raise BadMessage(
            TOO_LARGE,
            f"a message of {format_size(size)} is over {format_size(limit.size)} ({limit.option})",
        )
    if not JsonDepth(limit.depth).feed(raw):
        raise BadMessage(BAD_REQUEST, f"the message: {depth_refusal(limit.depth)}")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'message'}: {error['msg']}"
            for error in exc.errors()
        )
        raise BadMessage(BAD_REQUEST, f"not a valid {model.__name__}: {problems}") from None


async def _deny(websocket: WebSocket, status: int, message: str, kind: str | None = None) -> None:
    """Refuse the handshake with an HTTP answer (a problem), where the server can send
    one; else close with 4000 + status."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        titles = {401: "Unauthorized", 404: "Not Found", 410: "Gone"}
        title = titles.get(status, "Error")
        await websocket.send_denial_response(problem(status, title, message, kind=kind))
    else:
        await websocket.close(4000 + status, message[:CLOSE_REASON])


async def send(websocket: WebSocket, frame: dict[str, Any]) -> None:
    """A JSON frame, unless the client has gone."""
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.send_json(frame)


async def close_with(websocket: WebSocket, code: int, message: str, kind: str) -> None:
    """An error frame with the whole reason, then a close with ``code`` and its start."""
    await send(websocket, {"type": "error", "message": message, "kind": kind})
    reason = message.encode()[:CLOSE_REASON].decode(errors="ignore")
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.close(code, reason)
