"""Calls over a WebSocket: stdin as it is typed, signals, and a pty when asked for.

The client opens ``/v1/sessions/{id}/exec/ws`` with its key in a header, sends
``{"request": ExecRequest, "pty": false, "rows": 24, "cols": 80}``, then any of
``{"stdin": BASE64}``, ``{"stdin_close": true}``, ``{"signal": N}``,
``{"resize": {"rows": R, "cols": C}}``; the server sends each event of the call as JSON
(``{"type": "stdout", "data": BASE64}``, ..., ``{"type": "exit", ...}``) and closes; output
is the box's bytes in URL-safe base64, as pydantic writes bytes (a pty's screen comes as
``stdout`` events).

Every message is validated (``OpenCall``, ``CallMessage``) and held to the role's
``max_body_bytes``. A message that is not valid (not JSON, not base64, a signal that is no
integer, an unknown key) kills the running call, is answered with an error frame, and the
socket closes with 4400 (4413 when it is too large) and the reason.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import signal
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
)

from golem.core.errors import GolemError
from golem.core.sizes import format_size
from golem.sandbox import ExecRequest, Interaction, OutputEvent, Terminal
from golem.service.api.deps import principal_from_headers
from golem.service.policy import check_call
from golem.service.problems import Problem, problem
from golem.service.state import ServerState

__all__ = ["CallMessage", "OpenCall", "router"]

router = APIRouter(prefix="/v1", tags=["sessions"])
BAD_REQUEST = 4400
TOO_LARGE = 4413
CLOSE_REASON = 120  # a close frame's reason holds at most 123 bytes
Message = TypeVar("Message", bound=BaseModel)


class OpenCall(BaseModel):
    """The first message: what to run, and on a pty or pipes."""

    model_config = ConfigDict(extra="forbid")

    request: ExecRequest
    pty: StrictBool = False
    rows: StrictInt = Field(24, ge=1, le=1000)
    cols: StrictInt = Field(80, ge=1, le=1000)


class Resize(BaseModel):
    """A pty's new window size."""

    model_config = ConfigDict(extra="forbid")

    rows: StrictInt = Field(ge=1, le=1000)
    cols: StrictInt = Field(ge=1, le=1000)


class CallMessage(BaseModel):
    """A message while the call runs: stdin (base64), its end, a signal, a resize."""

    model_config = ConfigDict(extra="forbid")

    stdin: bytes | None = None
    stdin_close: StrictBool = False
    signal: StrictInt | None = Field(None, ge=1, le=64)
    resize: Resize | None = None

    @field_validator("stdin", mode="before")
    @classmethod
    def _base64(cls, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("stdin must be a base64 string")  # noqa: TRY004 - pydantic's
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("stdin is not base64 (A-Z, a-z, 0-9, +, / and = padding)") from None


class BadMessage(Exception):
    """A client's message the server cannot take: the call ends, the socket closes."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class _Limit:
    size: int
    option: str


async def _receive(websocket: WebSocket, model: type[Message], limit: _Limit) -> Message:
    """The client's next message as ``model``; BadMessage when it is not one."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    data: str | bytes = message.get("text") or message.get("bytes") or b""
    size = len(data.encode() if isinstance(data, str) else data)
    if size > limit.size:
        raise BadMessage(
            TOO_LARGE,
            f"a message of {format_size(size)} is over {format_size(limit.size)} ({limit.option})",
        )
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'message'}: {error['msg']}"
            for error in exc.errors()
        )
        raise BadMessage(BAD_REQUEST, f"not a valid {model.__name__}: {problems}") from None


@router.websocket("/sessions/{session_id}/exec/ws")
async def interactive(websocket: WebSocket, session_id: str) -> None:
    """An interactive call in a session."""
    state: ServerState = websocket.app.state.golem
    principal = await principal_from_headers(state, websocket.headers)
    if principal is None:
        await _deny(
            websocket, 401, "an API key is needed (Authorization: Bearer), or it is not valid"
        )
        return
    try:
        box = state.sessions.get(principal, session_id).box
    except Problem as missing:
        await _deny(websocket, 404, missing.message)
        return
    await websocket.accept()
    policy = state.config.server.policies[principal.role]
    limit = _Limit(policy.max_body_bytes, f"server.policies.{principal.role}.max_body_bytes")
    try:
        opened = await _receive(websocket, OpenCall, limit)
        check_call(opened.request, policy, principal.role)
        if opened.pty:
            terminal = await box.open_pty(opened.request)
            await terminal.resize(opened.rows, opened.cols)
            await _pty(websocket, terminal, limit)
        else:
            async with box.interact(opened.request) as call:  # leaving it kills the call
                await _pipes(websocket, call, limit)
    except WebSocketDisconnect:
        return
    except BadMessage as bad:
        await _close(websocket, bad.code, bad.message, "BadMessage")
        return
    except GolemError as exc:
        await _send(websocket, {"type": "error", "message": exc.message, "kind": "error"})
    with contextlib.suppress(RuntimeError):
        await websocket.close()


async def _deny(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with an HTTP answer (a problem), where the server can send
    one; else close with 4000 + status."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        titles = {401: "Unauthorized", 404: "Not Found"}
        await websocket.send_denial_response(problem(status, titles[status], message))
    else:
        await websocket.close(4000 + status, message[:CLOSE_REASON])


async def _send(websocket: WebSocket, frame: dict[str, Any]) -> None:
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.send_json(frame)


async def _close(websocket: WebSocket, code: int, message: str, kind: str) -> None:
    """An error frame with the whole reason, then a close with ``code`` and its start."""
    await _send(websocket, {"type": "error", "message": message, "kind": kind})
    reason = message.encode()[:CLOSE_REASON].decode(errors="ignore")
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.close(code, reason)


async def _pipes(websocket: WebSocket, call: Interaction, limit: _Limit) -> None:
    listener = asyncio.ensure_future(_listen(websocket, call, limit))
    try:
        async for event in call.events():
            _raise_if_failed(listener)
            await websocket.send_text(event.model_dump_json())
    finally:
        await _stop(listener)


async def _pty(websocket: WebSocket, terminal: Terminal, limit: _Limit) -> None:
    listener = asyncio.ensure_future(_listen(websocket, terminal, limit))
    try:
        while (data := await terminal.read()) is not None:
            _raise_if_failed(listener)
            await websocket.send_text(OutputEvent(type="stdout", data=data).model_dump_json())
        _raise_if_failed(listener)
        await websocket.send_json({"type": "exit", "exit_code": terminal.exit_code})
    finally:
        if terminal.exit_code is None:  # the client left or misbehaved: no shell runs on
            with contextlib.suppress(GolemError, OSError):
                await terminal.signal(signal.SIGKILL)
        await _stop(listener)


def _raise_if_failed(listener: asyncio.Task[None]) -> None:
    """The listener's error (a bad message, the client gone), once it has one."""
    if listener.done() and not listener.cancelled() and (error := listener.exception()):
        raise error


async def _stop(listener: asyncio.Task[None]) -> None:
    listener.cancel()
    with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, BadMessage):
        await listener


async def _listen(websocket: WebSocket, call: Interaction | Terminal, limit: _Limit) -> None:
    """Apply the client's messages to the running call until it leaves or misbehaves;
    then kill the call, so that its events end and the error is raised there."""
    try:
        while True:
            message = await _receive(websocket, CallMessage, limit)
            with contextlib.suppress(GolemError, OSError):  # the call may have just ended
                await _apply(message, call)
    except (BadMessage, WebSocketDisconnect):
        with contextlib.suppress(GolemError, OSError):
            await call.signal(signal.SIGKILL)
        raise


async def _apply(message: CallMessage, call: Interaction | Terminal) -> None:
    if message.stdin is not None:
        await call.write(message.stdin)
    if message.stdin_close and isinstance(call, Interaction):
        await call.close_stdin()
    if message.signal is not None:
        await call.signal(message.signal)
    if message.resize is not None and isinstance(call, Terminal):
        await call.resize(message.resize.rows, message.resize.cols)
