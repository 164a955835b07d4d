"""A session's call channel, the client's end: ``execute`` and ``stream`` calls over one
WebSocket per session (``/v1/sessions/{id}/calls``), many at a time, told apart by an id the
client picks. The frames are ``golem.sandbox.remote.frames``.

A socket runs at most its role's ``max_calls_per_socket`` calls at once; the handshake's
``Golem-Max-Calls`` header tells how many, and the client here holds further calls until one
ends (a call past the cap is answered with an error frame of status 429). A call the channel
cannot take (an id running already: 409; no request: 422) is answered with an error of its
id, and the socket goes on; a message that cannot be read closes it (4400, 4413), ending its
calls. A frame from the server that is none of the protocol's ends the socket's calls with
``MalformedFrame``, which names it.

The same calls are routes of their own (``POST .../exec``, ``.../exec/stream``); the
channel saves each call an HTTP request's work on both sides. Every call on it is checked
as the route checks it: the key (again, so that a revoked key stops), the session's
tenant, the role's call policy and its ``max_body_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any, Literal

import websockets

from golem.core.errors import GolemError, MalformedFrame
from golem.core.events import ExecEvent
from golem.sandbox.models import ExecRequest, ExecResult
from golem.sandbox.remote.frames import (
    MOST_CALLS_HEADER,
    AnswerFrame,
    CallFrame,
    EndFrame,
    ErrorFrame,
    EventFrame,
    ProblemFrame,
    ResultFrame,
    read_answer,
)

__all__ = ["CallChannel"]

UNCAPPED = 2**31  # a server that does not say has no cap
PROTOCOL_ERROR = 1002  # RFC 6455: the socket closes for a frame of no known kind


Raise = Callable[[ProblemFrame], GolemError]
CLOSED = "the connection to the golem server closed during a call; see the server's log, and retry"
Received = AnswerFrame | GolemError
"""What a call's queue holds: the server's frames for it, or why its socket ended."""


class CallChannel:
    """The client's end: one WebSocket, opened on the first call and again after a loss;
    a reader task hands each frame to the call it answers."""

    def __init__(self, url: str, key: str, error_of: Raise) -> None:
        self._url = url
        self._headers = {"Authorization": f"Bearer {key}"}
        self._error_of = error_of
        self._socket: Any = None
        self._slots = asyncio.Semaphore(UNCAPPED)  # calls at once, as the handshake says
        self._reader: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()
        self._calls: dict[int, asyncio.Queue[Received]] = {}
        self._ids = itertools.count()

    async def execute(self, request: ExecRequest) -> ExecResult:
        """A call to its end: its result."""
        async with contextlib.aclosing(self._call("execute", request)) as answers:
            async for answer in answers:
                if isinstance(answer, ResultFrame):
                    return answer.result
        raise GolemError("the server ended a call without its result")

    async def stream(self, request: ExecRequest) -> AsyncGenerator[ExecEvent, None]:
        """A call's events as they come."""
        async with contextlib.aclosing(self._call("stream", request)) as answers:
            async for answer in answers:
                if isinstance(answer, EventFrame):
                    yield answer.event

    async def _call(
        self, op: Literal["execute", "stream"], request: ExecRequest
    ) -> AsyncGenerator[AnswerFrame]:
        socket = await self._connected()
        async with self._slots, contextlib.aclosing(self._answers(socket, op, request)) as answers:
            async for answer in answers:
                yield answer

    async def _answers(
        self, socket: Any, op: Literal["execute", "stream"], request: ExecRequest
    ) -> AsyncGenerator[AnswerFrame]:
        call_id = next(self._ids)
        answers: asyncio.Queue[Received] = asyncio.Queue()
        self._calls[call_id] = answers
        finished = False
        try:
            try:
                call = CallFrame(id=call_id, op=op, request=request)
                await socket.send(call.model_dump_json(exclude_defaults=True))
            except websockets.ConnectionClosed:
                answers.put_nowait(GolemError(CLOSED))
            while True:
                answer = await answers.get()
                if isinstance(answer, GolemError):
                    raise answer
                if isinstance(answer, ErrorFrame):
                    finished = True
                    raise self._error_of(answer.error)
                finished = isinstance(answer, EndFrame | ResultFrame)
                yield answer
                if finished:
                    return
        finally:
            self._calls.pop(call_id, None)
            if not finished and socket is self._socket:
                with contextlib.suppress(websockets.ConnectionClosed):
                    await socket.send(CallFrame(id=call_id, op="cancel").model_dump_json())

    async def _connected(self) -> Any:
        async with self._connecting:
            if self._socket is None:
                self._socket = await self._connect()
                most = self._socket.response.headers.get(MOST_CALLS_HEADER, "")
                self._slots = asyncio.Semaphore(int(most) if most.isdigit() else UNCAPPED)
                self._reader = asyncio.create_task(self._read(self._socket))
            return self._socket

    async def _connect(self) -> Any:
        """The socket; a refused handshake raises the problem the server answered."""
        try:
            # No permessage-deflate: frames are small, and compressing each costs both sides
            # more CPU than the bytes it saves on the way.
            return await websockets.connect(
                self._url, additional_headers=self._headers, max_size=None, compression=None
            )
        except websockets.InvalidStatus as refused:
            response = refused.response
            try:
                body = json.loads(response.body or b"{}")
            except ValueError:
                body = {}
            detail = str(body.get("detail") or response.reason_phrase)
            kind = body.get("kind")
            raise self._error_of(
                ProblemFrame(status=response.status_code, kind=kind, detail=detail)
            ) from None
        except (OSError, websockets.InvalidHandshake, TimeoutError) as exc:
            raise self._error_of(
                ProblemFrame(
                    status=503, detail=f"cannot reach the golem server at {self._url}: {exc}"
                )
            ) from exc

    async def _read(self, socket: Any) -> None:
        ending: Callable[[], GolemError] = functools.partial(GolemError, CLOSED)
        try:
            async for message in socket:
                answer = read_answer(message)
                if (answers := self._calls.get(answer.id)) is not None:
                    answers.put_nowait(answer)
        except websockets.ConnectionClosed:
            pass  # a lost connection: its calls end with an error
        except MalformedFrame as malformed:  # nothing more of this socket can be trusted
            ending = functools.partial(MalformedFrame, malformed.message)
            with contextlib.suppress(websockets.ConnectionClosed):
                await socket.close(PROTOCOL_ERROR, "a frame that is none of the call channel's")
        finally:
            if self._socket is socket:
                self._socket = None
            for answers in self._calls.values():
                answers.put_nowait(ending())  # an error of each call's own

    async def close(self) -> None:
        """Close the socket (calls still running get an error)."""
        socket, reader = self._socket, self._reader
        self._socket = self._reader = None
        if socket is not None:
            with contextlib.suppress(Exception):
                await socket.close()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await reader
