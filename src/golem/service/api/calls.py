"""A session's call channel on the server (``/v1/sessions/{id}/calls``; the wire is
described in ``golem.sandbox.remote.frames``, whose models it reads and writes): each call
runs as a task of its own, checked as the HTTP routes check theirs, its answers sent one
frame at a time.

A socket runs at most its role's ``max_calls_per_socket`` calls at once, and a call waits
for the client to read each frame before it makes the next (the socket's writes wait for
the client's reads), so what a socket holds is bounded however slowly its client reads.
A call the channel cannot take (its id running already, no request, over the cap) is
answered with an error frame of its id; the socket and its other calls go on. A message
that cannot be read at all closes the socket (4400, 4413), which ends every call of it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from golem.core.errors import BadMessage, GolemError, Problem
from golem.sandbox import (
    MOST_CALLS_HEADER,
    AnswerFrame,
    Box,
    CallFrame,
    EndFrame,
    ErrorFrame,
    EventFrame,
    ExecRequest,
    ProblemFrame,
    ResultFrame,
)
from golem.service.api.deps import principal_from_headers
from golem.service.api.sockets import (
    MessageLimit,
    close_with,
    open_session_socket,
    receive,
)
from golem.service.keys import Principal
from golem.service.policy import check_call
from golem.service.state import ServerState

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["sessions"])
log = logging.getLogger("golem.service")


class _Channel:
    """The server's end of one socket: its running calls, and one writer at a time."""

    def __init__(
        self, websocket: WebSocket, state: ServerState, session_id: str, role: str
    ) -> None:
        self.websocket = websocket
        self.state = state
        self.session_id = session_id
        self.calls: dict[int, asyncio.Task[None]] = {}
        self.most = state.config.server.policies[role].max_calls_per_socket
        self._option = f"server.policies.{role}.max_calls_per_socket"
        self._sending = asyncio.Lock()

    async def send(self, frame: AnswerFrame) -> None:
        text = frame.model_dump_json()
        async with self._sending:
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await self.websocket.send_text(text)

    async def begin(self, message: CallFrame) -> None:
        """Start a call, cancel one, or answer why the call cannot be taken."""
        call_id = message.id
        if message.op == "cancel":  # its slot free at once, its id too
            if (task := self.calls.pop(call_id, None)) is not None:
                task.cancel()
        elif call_id in self.calls:
            detail = f"call {call_id} is running already: give each running call an id of its own"
            await self.refuse(call_id, 409, "BadMessage", detail)
        elif message.request is None:
            detail = f"call {call_id} ({message.op}) has no request"
            await self.refuse(call_id, 422, "BadMessage", detail)
        elif len(self.calls) >= self.most:
            detail = (
                f"{len(self.calls)} calls are running on this socket, the most {self._option} "
                "allows: wait for one to end, or cancel one"
            )
            await self.refuse(call_id, 429, "Problem", detail)
        else:
            task = asyncio.create_task(self._run(message))
            self.calls[call_id] = task
            task.add_done_callback(lambda done: self._forget(call_id, done))

    def _forget(self, call_id: int, task: asyncio.Task[None]) -> None:
        if self.calls.get(call_id) is task:  # not a later call given the id again
            del self.calls[call_id]

    async def refuse(self, call_id: int, status: int, kind: str, detail: str) -> None:
        problem = ProblemFrame(status=status, kind=kind, detail=detail)
        await self.send(ErrorFrame(id=call_id, error=problem))

    async def _run(self, message: CallFrame) -> None:
        call_id, request = message.id, message.request
        assert request is not None
        try:
            box = await self._checked(request)
            if message.op == "execute":
                result = await box.execute(request)
                await self.send(ResultFrame(id=call_id, result=result))
                return
            async with contextlib.aclosing(box.stream(request)) as events:
                async for event in events:
                    await self.send(EventFrame(id=call_id, event=event))
            await self.send(EndFrame(id=call_id))
        except GolemError as exc:
            await self.refuse(call_id, exc.http_status, type(exc).__name__, exc.message)
        except Exception as exc:  # the route's 500: logged, the client told where to look
            log.exception("unexpected error in a call")
            detail = f"golem failed ({type(exc).__name__}); the server's log has the details"
            await self.refuse(call_id, 500, "InternalError", detail)

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


def _most_calls(state: ServerState) -> Callable[[Principal], dict[str, str]]:
    """The handshake's word on the cap, which the client keeps to (rather than be refused)."""

    def headers(principal: Principal) -> dict[str, str]:
        most = state.config.server.policies[principal.role].max_calls_per_socket
        return {MOST_CALLS_HEADER: str(most)}

    return headers


@router.websocket("/sessions/{session_id}/calls")
async def calls(websocket: WebSocket, session_id: str) -> None:
    """A session's call channel: execute and stream calls, many at a time."""
    state: ServerState = websocket.app.state.golem
    opened = await open_session_socket(websocket, state, session_id, headers=_most_calls(state))
    if opened is None:
        return
    principal, _box = opened
    limit = MessageLimit.of(principal, state.config.server)
    channel = _Channel(websocket, state, session_id, principal.role)
    try:
        while True:
            await channel.begin(await receive(websocket, CallFrame, limit))
    except WebSocketDisconnect:
        return
    except BadMessage as bad:
        await close_with(websocket, bad.code, str(bad), "BadMessage")
    finally:
        await channel.stop()
