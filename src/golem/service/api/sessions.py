"""The engine over HTTP: sessions, calls (plain, streamed as server-sent events, or over a
WebSocket with stdin and signals), background processes, one-shot calls. Files and
archives are in ``api/files.py``."""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, cast

from fastapi import APIRouter, Body, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field, create_model
from sse_starlette import EventSourceResponse

from golem.core.errors import GolemError
from golem.core.events import ExecEvent, NetworkEvent
from golem.core.isolation import Isolation
from golem.core.spec import SNAPSHOT_NAME, BoxSpec
from golem.sandbox import (
    BackgroundProcess,
    Box,
    ExecRequest,
    ExecResult,
    ProcessOutput,
    SnapshotInfo,
)
from golem.service.api.deps import Caller, State
from golem.service.api.streams import Frame, closed, event_stream, while_connected
from golem.service.keys import Principal
from golem.service.policy import check_call
from golem.service.sessions import HeldSession
from golem.service.state import ServerState

__all__ = [
    "BoxSpecFields",
    "ExecOnce",
    "SessionCreate",
    "SessionInfo",
    "asked",
    "checked_box",
    "router",
    "session_box",
]

router = APIRouter(prefix="/v1", tags=["sessions"])


def _optional_fields() -> dict[str, Any]:
    """BoxSpec's fields, each optional (unset: the server's default), constraints kept."""
    fields: dict[str, Any] = {}
    for name, field in BoxSpec.model_fields.items():
        annotation = (
            Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        )
        fields[name] = (cast(Any, annotation) | None, Field(None, description=field.description))
    return fields


BoxSpecFields: type[BaseModel] = create_model(
    "BoxSpecFields",
    __config__=ConfigDict(extra="forbid"),
    __doc__="BoxSpec fields to set over the server's defaults (within the key's policy).",
    **_optional_fields(),
)


def asked(spec: BaseModel) -> dict[str, Any]:
    """The fields a request set, as the engine takes them (secrets in clear)."""
    return {
        name: getattr(spec, name)
        for name in spec.model_fields_set
        if getattr(spec, name) is not None
    }


class SessionCreate(BaseModel):
    """A session's box: BoxSpec fields over the server's defaults, within the key's policy."""

    model_config = ConfigDict(extra="forbid")

    spec: BoxSpecFields = Field(default_factory=BoxSpecFields)


class SessionInfo(BaseModel):
    """A session as the API shows it (secrets redacted)."""

    id: str
    created: float
    spec: BoxSpec
    runtimes: dict[str, str]
    isolation: Isolation | None = Field(
        None, description="What isolation the box got: its tier, backend, accelerator."
    )

    @classmethod
    def of(cls, held: HeldSession) -> SessionInfo:
        """The info of a held session."""
        box = held.box
        return cls(
            id=box.id,
            created=held.created,
            spec=box.spec,
            runtimes=box.runtimes,
            isolation=box.isolation,
        )


class ExecOnce(BaseModel):
    """A call in a box of its own (from the pool), released when it ends."""

    model_config = ConfigDict(extra="forbid")

    request: ExecRequest
    spec: BoxSpecFields = Field(default_factory=BoxSpecFields)


class SignalBody(BaseModel):
    """A signal to send."""

    signal: int = Field(int(signals.SIGTERM), ge=1, le=64)


class WaitBody(BaseModel):
    """How long to wait for a background process."""

    timeout: float | None = Field(None, gt=0, le=3600)


class WaitResult(BaseModel):
    """A background process's exit code, or None while it runs."""

    exit_code: int | None


def _sse(
    events: AsyncIterator[ExecEvent], after: Callable[[], Awaitable[None]] | None = None
) -> EventSourceResponse:
    async def frames() -> AsyncIterator[Frame]:
        try:
            async for event in events:
                yield {"event": event.type, "data": event.model_dump_json()}
        finally:  # the call killed now, not when the garbage collector finds it
            await closed(events)

    return event_stream(frames(), after)


@router.post("/sessions", status_code=status.HTTP_201_CREATED)
async def create_session(
    body: SessionCreate, principal: Caller, state: State, asking: Request
) -> SessionInfo:
    """Start a session: a box for many calls, until it is deleted (none if the client left)."""
    return SessionInfo.of(
        await while_connected(asking, state.sessions.open(principal, asked(body.spec)))
    )


@router.post(
    "/sessions/stream",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def create_session_streamed(
    body: SessionCreate, principal: Caller, state: State
) -> EventSourceResponse:
    """Start a session, its setup script's events as server-sent events as they come;
    then ``event: session`` with its info, or ``event: problem`` with why it failed (a
    problem's details: status, kind, detail)."""
    return event_stream(_opening(state, principal, asked(body.spec)))


async def _opening(
    state: ServerState, principal: Principal, spec: dict[str, Any]
) -> AsyncIterator[Frame]:
    events: asyncio.Queue[ExecEvent | None] = asyncio.Queue()
    opening = asyncio.ensure_future(
        state.sessions.open(principal, spec, on_event=events.put_nowait)
    )
    opening.add_done_callback(lambda _: events.put_nowait(None))
    delivered = False
    try:
        while (event := await events.get()) is not None:
            yield {"event": event.type, "data": event.model_dump_json()}
        held = opening.result()  # its error, if any, is the stream's problem
        yield {"event": "session", "data": SessionInfo.of(held).model_dump_json()}
        delivered = True
    finally:
        if not opening.done():  # the client left during the setup
            opening.cancel()
            with contextlib.suppress(asyncio.CancelledError, GolemError):
                await opening
        elif not delivered and not opening.cancelled() and opening.exception() is None:
            await state.sessions.close(principal, opening.result().box.id)


@router.get("/sessions")
async def list_sessions(principal: Caller, state: State) -> list[SessionInfo]:
    """This tenant's sessions."""
    return [SessionInfo.of(held) for held in state.sessions.list(principal)]


@router.get("/sessions/{session_id}")
async def get_session(session_id: str, principal: Caller, state: State) -> SessionInfo:
    """One session."""
    return SessionInfo.of(state.sessions.get(principal, session_id))


@router.delete("/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_session(session_id: str, principal: Caller, state: State) -> None:
    """End a session (its box is wiped for reuse or stopped)."""
    await state.sessions.close(principal, session_id)


class SnapshotCreate(BaseModel):
    """A snapshot to take of a session's box."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=f"^{SNAPSHOT_NAME}$",
        description="Its name among the tenant's snapshots (lower-case letters, digits, '.', "
        "'_' and '-'); an existing one is replaced.",
    )
    max_tenant_bytes: int | None = Field(
        None,
        ge=0,
        description="The most this tenant's snapshots may take with this one (its oldest "
        "others are removed to fit); the role's max_snapshot_bytes holds too.",
    )


@router.post("/sessions/{session_id}/snapshot", status_code=status.HTTP_201_CREATED)
async def snapshot_session(
    session_id: str, body: SnapshotCreate, principal: Caller, state: State
) -> SnapshotInfo:
    """Freeze the session's /workspace, /tmp and /dev/shm as a snapshot of this tenant's,
    checked as any takeback (422 naming the rule it breaks), the tenant's snapshots kept
    within the role's max_snapshot_bytes (its oldest others removed; 403 for one that
    alone passes it); a session whose spec names it starts from a copy of it."""
    session_box(state, principal, session_id)  # 404 for another tenant's
    caps = [body.max_tenant_bytes, state.config.server.policies[principal.role].max_snapshot_bytes]
    cap = min((c for c in caps if c is not None), default=None)
    return await state.engine.snapshot(session_id, body.name, max_tenant_bytes=cap)


def session_box(state: ServerState, principal: Principal, session_id: str) -> Box:
    """The box of a session of the principal's tenant (404 for any other)."""
    return state.sessions.get(principal, session_id).box


def checked_box(
    state: ServerState, principal: Principal, session_id: str, request: ExecRequest
) -> Box:
    """The session's box, once the call is within the key's policy (the REST API and the
    MCP server alike)."""
    box = session_box(state, principal, session_id)
    check_call(request, state.config.server.policies[principal.role], principal.role)
    return box


@router.post("/sessions/{session_id}/exec")
async def execute(
    session_id: str, request: ExecRequest, principal: Caller, state: State, asking: Request
) -> ExecResult:
    """Run a call to its end; its result (the call is killed if the client leaves)."""
    box = checked_box(state, principal, session_id, request)
    return await while_connected(asking, box.execute(request))


@router.post(
    "/sessions/{session_id}/exec/stream",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream(
    session_id: str, request: ExecRequest, principal: Caller, state: State
) -> EventSourceResponse:
    """Run a call; its events as server-sent events (event: the type; data: the event)."""
    return _sse(checked_box(state, principal, session_id, request).stream(request))


@router.post("/sessions/{session_id}/processes", status_code=status.HTTP_201_CREATED)
async def start_process(
    session_id: str, request: ExecRequest, principal: Caller, state: State
) -> BackgroundProcess:
    """Start a background process."""
    return await checked_box(state, principal, session_id, request).start(request)


@router.get("/sessions/{session_id}/processes")
async def list_processes(
    session_id: str, principal: Caller, state: State
) -> list[BackgroundProcess]:
    """The session's background processes."""
    return await session_box(state, principal, session_id).processes()


@router.get("/sessions/{session_id}/processes/{process_id}/output")
async def process_output(
    session_id: str,
    process_id: str,
    principal: Caller,
    state: State,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> ProcessOutput:
    """A background process's output from ``offset`` on."""
    return await session_box(state, principal, session_id).read_output(process_id, offset)


@router.post(
    "/sessions/{session_id}/processes/{process_id}/signal",
    status_code=status.HTTP_204_NO_CONTENT,
)
async def signal_process(
    session_id: str, process_id: str, body: SignalBody, principal: Caller, state: State
) -> None:
    """Send a signal to a background process."""
    await session_box(state, principal, session_id).signal(process_id, body.signal)


@router.post("/sessions/{session_id}/processes/{process_id}/wait")
async def wait_process(
    session_id: str,
    process_id: str,
    body: WaitBody,
    principal: Caller,
    state: State,
    asking: Request,
) -> WaitResult:
    """Wait (at most ``timeout``) for a background process to end (no longer once the
    client has left)."""
    box = session_box(state, principal, session_id)
    code = await while_connected(asking, box.wait(process_id, body.timeout))
    return WaitResult(exit_code=code)


@router.delete(
    "/sessions/{session_id}/processes/{process_id}", status_code=status.HTTP_204_NO_CONTENT
)
async def forget_process(session_id: str, process_id: str, principal: Caller, state: State) -> None:
    """Kill a background process if it runs, and drop its output."""
    await session_box(state, principal, session_id).forget(process_id)


@router.get("/sessions/{session_id}/network")
async def network_log(session_id: str, principal: Caller, state: State) -> list[NetworkEvent]:
    """The egress proxy's decisions for this session (filtered boxes)."""
    return await session_box(state, principal, session_id).network_log()


@router.post("/exec")
async def execute_once(
    body: ExecOnce, principal: Caller, state: State, asking: Request
) -> ExecResult:
    """A call in a box of its own, released when it ends or its client leaves."""
    check_call(body.request, state.config.server.policies[principal.role], principal.role)

    async def once() -> ExecResult:
        held = await state.sessions.open(principal, asked(body.spec))
        try:
            return await held.box.execute(body.request)
        finally:
            await state.sessions.close(principal, held.box.id)

    return await while_connected(asking, once())


@router.post(
    "/exec/stream",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_once(
    body: Annotated[ExecOnce, Body()], principal: Caller, state: State, request: Request
) -> EventSourceResponse:
    """A call in a box of its own, its events as server-sent events."""
    check_call(body.request, state.config.server.policies[principal.role], principal.role)
    held = await while_connected(request, state.sessions.open(principal, asked(body.spec)))

    released = asyncio.Event()

    async def release() -> None:  # when the stream ends, or after a client gone before it
        if not released.is_set():
            released.set()
            await state.sessions.close(principal, held.box.id)

    async def events() -> AsyncGenerator[ExecEvent, None]:
        try:
            async with contextlib.aclosing(held.box.stream(body.request)) as events:
                async for event in events:
                    yield event
        finally:
            await release()

    return _sse(events(), after=release)
