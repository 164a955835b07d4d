"""Calls over a WebSocket: stdin as it is typed, signals, and a pty when asked for.

The client opens ``/v1/sessions/{id}/exec/ws`` with its key in a header, sends
``{"request": ExecRequest, "pty": false, "rows": 24, "cols": 80}``, then any of
``{"stdin": BASE64}``, ``{"stdin_close": true}``, ``{"signal": N}``,
``{"resize": {"rows": R, "cols": C}}``; the server sends each event of the call as JSON
(``{"type": "stdout", "data": BASE64}``, ..., ``{"type": "exit", ...}``) and closes; output
is the box's bytes in URL-safe base64, as pydantic writes bytes (a pty's screen comes as
``stdout`` events).

Every message is validated (``OpenCall``, ``CallMessage``: the models of
``golem.sandbox.remote.frames``, which ``RemoteEngine`` writes) and held to the role's
``max_body_bytes``. A message that is not valid (not JSON, not base64, a signal that is no
integer, an unknown key) kills the running call, is answered with an error frame, and the
socket closes with 4400 (4413 when it is too large) and the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from golem.core.errors import BadMessage, GolemError
from golem.sandbox import CallMessage, Interaction, OpenCall, OutputEvent, Terminal
from golem.service.api.sockets import (
    MessageLimit,
    close_with,
    open_session_socket,
    receive,
    send,
)
from golem.service.policy import check_call
from golem.service.state import ServerState

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["sessions"])


@router.websocket("/sessions/{session_id}/exec/ws")
async def interactive(websocket: WebSocket, session_id: str) -> None:
    """An interactive call in a session."""
    state: ServerState = websocket.app.state.golem
    opened_socket = await open_session_socket(websocket, state, session_id)
    if opened_socket is None:
        return
    principal, box = opened_socket
    policy = state.config.server.policies[principal.role]
    limit = MessageLimit.of(principal, state.config.server)
    try:
        opened = await receive(websocket, OpenCall, limit)
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
        await close_with(websocket, bad.code, str(bad), "BadMessage")
        return
    except GolemError as exc:
        await send(websocket, {"type": "error", "message": exc.message, "kind": "error"})
    with contextlib.suppress(RuntimeError):
        await websocket.close()


async def _pipes(websocket: WebSocket, call: Interaction, limit: MessageLimit) -> None:
    listener = asyncio.ensure_future(_listen(websocket, _to_call(call), call.signal, limit))
    try:
        async for event in call.events():
            _raise_if_failed(listener)
            await websocket.send_text(event.model_dump_json())
    finally:
        await _stop(listener)


async def _pty(websocket: WebSocket, terminal: Terminal, limit: MessageLimit) -> None:
    listener = asyncio.ensure_future(
        _listen(websocket, _to_terminal(terminal), terminal.signal, limit)
    )
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


Apply = Callable[[CallMessage], Awaitable[None]]


async def _listen(
    websocket: WebSocket,
    apply: Apply,
    send_signal: Callable[[int], Awaitable[None]],
    limit: MessageLimit,
) -> None:
    """Apply the client's messages to the running call until it leaves or misbehaves;
    then kill the call, so that its events end and the error is raised there."""
    try:
        while True:
            message = await receive(websocket, CallMessage, limit)
            with contextlib.suppress(GolemError, OSError):  # the call may have just ended
                await apply(message)
    except (BadMessage, WebSocketDisconnect):
        with contextlib.suppress(GolemError, OSError):
            await send_signal(signal.SIGKILL)
        raise


def _to_call(call: Interaction) -> Apply:
    """A message's stdin, its end and its signal, for a call on pipes."""

    async def apply(message: CallMessage) -> None:
        if message.stdin is not None:
            await call.write(message.stdin)
        if message.stdin_close:
            await call.close_stdin()
        if message.signal is not None:
            await call.signal(message.signal)

    return apply


def _to_terminal(terminal: Terminal) -> Apply:
    """A message's stdin, its signal and its resize, for a call on a pty."""

    async def apply(message: CallMessage) -> None:
        if message.stdin is not None:
            await terminal.write(message.stdin)
        if message.signal is not None:
            await terminal.signal(message.signal)
        if message.resize is not None:
            await terminal.resize(message.resize.rows, message.resize.cols)

    return apply
