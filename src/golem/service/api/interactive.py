"""Calls over a WebSocket: stdin as it is typed, signals, and a pty when asked for.

The client opens ``/v1/sessions/{id}/exec/ws`` with its key in a header, sends
``{"request": ExecRequest, "pty": false, "rows": 24, "cols": 80}``, then any of
``{"stdin": BASE64}``, ``{"stdin_close": true}``, ``{"signal": N}``,
``{"resize": {"rows": R, "cols": C}}``; the server sends each event of the call as JSON
(``{"type": "stdout", "data": ...}``, ..., ``{"type": "exit", ...}``) and closes.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import signal
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from golem.core.errors import GolemError
from golem.sandbox import ExecRequest, Interaction, Terminal
from golem.service.api.deps import principal_of
from golem.service.keys import Principal
from golem.service.policy import check_call
from golem.service.problems import Problem, problem
from golem.service.state import ServerState

__all__ = ["OpenCall", "router"]

router = APIRouter(prefix="/v1", tags=["sessions"])
BAD_REQUEST = 4400


class OpenCall(BaseModel):
    """The first message: what to run, and on a pty or pipes."""

    model_config = ConfigDict(extra="forbid")

    request: ExecRequest
    pty: bool = False
    rows: int = Field(24, ge=1, le=1000)
    cols: int = Field(80, ge=1, le=1000)


async def _principal(websocket: WebSocket, state: ServerState) -> Principal | None:
    header = websocket.headers.get("authorization", "")
    presented = header.removeprefix("Bearer ").strip() or websocket.headers.get("x-golem-key")
    return await principal_of(state, presented) if presented else None


@router.websocket("/sessions/{session_id}/exec/ws")
async def interactive(websocket: WebSocket, session_id: str) -> None:
    """An interactive call in a session."""
    state: ServerState = websocket.app.state.golem
    principal = await _principal(websocket, state)
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
    try:
        opened = OpenCall.model_validate(await websocket.receive_json())
    except (ValidationError, ValueError) as exc:
        await websocket.close(BAD_REQUEST, f"the first message must be an OpenCall: {exc}"[:120])
        return
    try:
        check_call(opened.request, state.config.server.policies[principal.role], principal.role)
        if opened.pty:
            terminal = await box.open_pty(opened.request)
            await terminal.resize(opened.rows, opened.cols)
            await _pty(websocket, terminal)
        else:
            async with box.interact(opened.request) as call:
                await _pipes(websocket, call)
    except WebSocketDisconnect:
        return
    except GolemError as exc:
        await websocket.send_json({"type": "error", "message": exc.message, "kind": "error"})
    with contextlib.suppress(RuntimeError):
        await websocket.close()


async def _deny(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with an HTTP answer (a problem), where the server can send
    one; else close with 4000 + status."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        titles = {401: "Unauthorized", 404: "Not Found"}
        await websocket.send_denial_response(problem(status, titles[status], message))
    else:
        await websocket.close(4000 + status, message[:120])


async def _pipes(websocket: WebSocket, call: Interaction) -> None:
    listener = asyncio.ensure_future(_listen(websocket, call))
    try:
        async for event in call.events():
            await websocket.send_text(event.model_dump_json())
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
            await listener


async def _pty(websocket: WebSocket, terminal: Terminal) -> None:
    listener = asyncio.ensure_future(_listen(websocket, terminal))
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while (data := await terminal.read()) is not None:
            if text := decoder.decode(data):
                await websocket.send_json({"type": "stdout", "data": text})
        await websocket.send_json({"type": "exit", "exit_code": terminal.exit_code})
    finally:
        if terminal.exit_code is None:  # the client left: its shell must not run on
            with contextlib.suppress(GolemError, OSError):
                await terminal.signal(signal.SIGKILL)
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect):
            await listener


async def _listen(websocket: WebSocket, call: Interaction | Terminal) -> None:
    """Apply the client's messages to the running call until it disconnects."""
    while True:
        message: dict[str, Any] = await websocket.receive_json()
        if "stdin" in message:
            await call.write(base64.b64decode(str(message["stdin"])))
        if message.get("stdin_close") and isinstance(call, Interaction):
            await call.close_stdin()
        if "signal" in message:
            await call.signal(int(message["signal"]))
        if "resize" in message and isinstance(call, Terminal):
            size = message["resize"]
            await call.resize(int(size["rows"]), int(size["cols"]))
