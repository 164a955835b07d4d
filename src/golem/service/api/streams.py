"""What the HTTP routes of calls share: a call that ends when its client leaves, and
server-sent events that end with ``event: problem`` when the stream fails.

A stream's failure after its 200 cannot be a status any more, so it is its last event:
``event: problem``, the data a problem's details (``status``, ``kind``, ``detail``), as the
status line would have carried. ``event: error`` stays what it is in a call's stream: an
ExecEvent of the box's (a call that could not start, a box that went away), which a
``problem`` may follow."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TypeVar

import anyio
from sse_starlette import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.requests import Request

from golem.core.errors import GolemError, Problem
from golem.service.problems import ProblemDetails

__all__ = [
    "CLIENT_LEFT",
    "Frame",
    "closed",
    "event_stream",
    "problem_frame",
    "while_connected",
]

T = TypeVar("T")
Frame = dict[str, str]
CLIENT_LEFT = 499  # nginx's "client closed request": only the server's log sees it
log = logging.getLogger("golem.service")


def problem_frame(exc: Exception) -> Frame:
    """``event: problem`` for an error that ends a stream (a 500 for one golem did not
    expect, logged here as the routes' handler logs it)."""
    if isinstance(exc, GolemError):
        status, kind, detail = exc.http_status, type(exc).__name__, exc.message
    else:
        log.error("unexpected error in a stream", exc_info=exc)
        status, kind = 500, "InternalError"
        detail = f"golem failed ({type(exc).__name__}); the server's log has the details"
    details = ProblemDetails(title=kind, status=status, detail=detail, kind=kind)
    return {"event": "problem", "data": details.model_dump_json(exclude_none=True)}


def event_stream(
    frames: AsyncIterator[Frame], after: Callable[[], Awaitable[None]] | None = None
) -> EventSourceResponse:
    """``frames`` as server-sent events, ``event: problem`` last if they fail; stopped (a
    call in them killed) as soon as the client leaves; then ``after`` (a one-shot box
    released), even when the client left before the first frame.

    The frames are made in a task of their own: sse-starlette cancels its response in an
    anyio scope, which cancels every ``await`` of a cleanup under it again (a box half
    released: its record gone, its cgroups left); one asyncio cancellation lets the
    producer's ``finally`` blocks run to their end."""

    async def guarded() -> AsyncIterator[Frame]:
        ready: asyncio.Queue[Frame | None] = asyncio.Queue(maxsize=1)  # the writer's pace
        producer = asyncio.ensure_future(_produce(frames, ready))
        try:
            while (frame := await ready.get()) is not None:
                yield frame
        finally:
            producer.cancel()
            with anyio.CancelScope(shield=True), contextlib.suppress(asyncio.CancelledError):
                await producer

    return EventSourceResponse(guarded(), background=BackgroundTask(after) if after else None)


async def _produce(frames: AsyncIterator[Frame], ready: asyncio.Queue[Frame | None]) -> None:
    try:
        async for frame in frames:
            await ready.put(frame)
    except Exception as exc:  # every failure is told, as a problem
        await ready.put(problem_frame(exc))
    finally:  # cancelled between two frames: their generator ended now, not by the GC
        await closed(frames)
    await ready.put(None)


async def closed(items: AsyncIterator[object]) -> None:
    """An async generator closed (its ``finally`` blocks run); another iterator left be."""
    if isinstance(items, AsyncGenerator):
        await items.aclose()


async def while_connected(request: Request, call: Awaitable[T]) -> T:
    """``call``'s result; cancelled (a box's call killed with it) as soon as the client
    that asked for it leaves."""
    task = asyncio.ensure_future(call)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, GolemError):
                await task
    if task.cancelled():
        raise Problem(CLIENT_LEFT, "the client left before the call ended; it was stopped")
    return task.result()


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the request's body was read before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
