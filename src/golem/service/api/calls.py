"""A session's call channel on the server (``/v1/sessions/{id}/calls``; the wire is
described in ``golem.service.channel``): each call runs as a task of its own, checked as
the HTTP routes check theirs, its answers sent one frame at a time."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from golem.core.errors import BadMessage, GolemError, Problem
from golem.sandbox import Box, ExecRequest
from golem.service.api.deps import principal_from_headers
from golem.service.api.sockets import (
    BAD_REQUEST,
    MessageLimit,
    close_with,
    open_session_socket,
    receive,
)
from golem.service.channel import ChannelCall, ProblemFrame
from golem.service.policy import check_call
from golem.service.state import ServerState

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["sessions"])
log = logging.getLogger("golem.service")


class _Channel:
    """The server's end of one socket: its running calls, and one writer at a time."""

    def __init__(self, websocket: WebSocket, state: ServerState, session_id: str) -> None:
        self.websocket = websocket
        self.state = state
        self.session_id = session_id
        self.calls: dict[int, asyncio.Task[None]] = {}
        self._sending = asyncio.Lock()

    async def send(self, frame: str) -> None:
        async with self._sending:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await self.websocket.send_text(frame)

    def begin(self, message: ChannelCall) -> None:
        if message.op == "cancel":
            if (task := self.calls.get(message.id)) is not None:
                task.cancel()
            return
        if message.id in self.calls:
            raise BadMessage(BAD_REQUEST, f"call {message.id} is running already")
        if message.request is None:
            raise BadMessage(BAD_REQUEST, f"call {message.id} ({message.op}) has no request")
        task = asyncio.create_task(self._run(message))
        self.calls[message.id] = task
        task.add_done_callback(lambda _: self.calls.pop(message.id, None))

    async def _run(self, message: ChannelCall) -> None:
        call_id, request = message.id, message.request
        assert request is not None
        try:
            box = await self._checked(request)
            if message.op == "execute":
                result = await box.execute(request)
                await self.send(f'{{"id":{call_id},"result":{result.model_dump_json()}}}')
                return
            async for event in box.stream(request):
                await self.send(f'{{"id":{call_id},"event":{event.model_dump_json()}}}')
            await self.send(f'{{"id":{call_id},"end":true}}')
        except GolemError as exc:
            frame = ProblemFrame(
                status=exc.http_status, kind=type(exc).__name__, detail=exc.message
            )
            await self.send(f'{{"id":{call_id},"error":{frame.model_dump_json()}}}')
        except Exception as exc:  # the route's 500: logged, the client told where to look
            log.exception("unexpected error in a call")
            detail = f"golem failed ({type(exc).__name__}); the server's log has the details"
            frame = ProblemFrame(status=500, kind="InternalError", detail=detail)
            await self.send(f'{{"id":{call_id},"error":{frame.model_dump_json()}}}')

    async def _checked(self, request: ExecRequest) -> Box:
        """The session's box for this call, checked as ``POST .../exec`` checks it: the
        key still valid, the session its tenant's and live, the call within the policy."""
        principal = await principal_from_headers(self.state, self.websocket.headers)
        if principal is None:
            raise Problem(401, "the API key is not valid, or was revoked")
        box = self.state.sessions.get(principal, self.session_id).box
        check_call(request, self.state.config.server.policies[principal.role], principal.role)
        return box

    async def stop(self) -> None:
        """Cancel the calls still running (their boxes' calls are killed)."""
        for task in list(self.calls.values()):
            task.cancel()
        for task in list(self.calls.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task


@router.websocket("/sessions/{session_id}/calls")
async def calls(websocket: WebSocket, session_id: str) -> None:
    """A session's call channel: execute and stream calls, many at a time."""
    state: ServerState = websocket.app.state.golem
    opened = await open_session_socket(websocket, state, session_id)
    if opened is None:
        return
    principal, _box = opened
    limit = MessageLimit.of(principal, state.config.server.policies[principal.role])
    channel = _Channel(websocket, state, session_id)
    try:
        while True:
            channel.begin(await receive(websocket, ChannelCall, limit))
    except WebSocketDisconnect:
        return
    except BadMessage as bad:
        await close_with(websocket, bad.code, str(bad), "BadMessage")
    finally:
        await channel.stop()
