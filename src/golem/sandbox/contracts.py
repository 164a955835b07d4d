"""The sandbox's contracts: what callers use of an engine and its boxes (``Engine``,
``Box``, ``Interaction``, ``Terminal``), and what the engine asks of a backend.

Two implementations satisfy the first four: this machine's (``LocalEngine``, ``LocalBox``)
and a golem server's (``golem.sandbox.RemoteEngine``, ``RemoteBox``); the agent,
blueprint and service layers are typed against these protocols only, and the session
parity tests run every scenario against both.

A backend starts a box from a spec and hands back a byte pipe to the box's supervisor. It
never runs commands itself: exec, streaming, files and limits are the supervisor's job.
"""

from __future__ import annotations

import asyncio
import signal as signals
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Collection,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from golem.core.config import GolemConfig
from golem.core.events import EventSink, ExecEvent, NetworkEvent
from golem.core.isolation import Isolation
from golem.core.spec import BoxSpec
from golem.sandbox.models import (
    BackgroundProcess,
    BoxInfo,
    ExecRequest,
    ExecResult,
    ProcessOutput,
    SnapshotInfo,
)
from golem.sandbox.records import BoxRecord
from golem.sandbox.takeback import Landed, TakebackLimits

__all__ = [
    "Backend",
    "Box",
    "Engine",
    "Interaction",
    "Mount",
    "Request",
    "SpecLike",
    "StartedBox",
    "Terminal",
]

Request = ExecRequest | str | Sequence[str]
"""A call: a request, a shell string or an argv list."""

SpecLike = BoxSpec | Mapping[str, Any] | None
"""A box spec, or the fields to set over the defaults."""


class Interaction(Protocol):
    """One running call whose stdin stays open (``Box.interact``)."""

    @property
    def finished(self) -> bool:
        """True once the call's exit event was read."""
        ...

    def events(self) -> AsyncGenerator[ExecEvent, None]:
        """The call's events: output as it comes, then its exit."""
        ...

    async def write(self, data: bytes) -> None:
        """Send bytes to the call's stdin."""
        ...

    async def close_stdin(self) -> None:
        """End the call's stdin (EOF)."""
        ...

    async def signal(self, number: int = signals.SIGTERM) -> None:
        """Send a signal to the call's process group."""
        ...


class Terminal(Protocol):
    """An interactive call on a pty (``Box.open_pty``)."""

    @property
    def exit_code(self) -> int | None:
        """The call's exit code once it has ended (-1: the box went away)."""
        ...

    async def write(self, data: bytes) -> None:
        """Send keystrokes."""
        ...

    async def signal(self, number: int) -> None:
        """Send a signal to the call's process group."""
        ...

    async def resize(self, rows: int, cols: int) -> None:
        """Tell the pty its window size."""
        ...

    async def read(self) -> bytes | None:
        """Next output bytes (secrets masked), or None once the call has ended."""
        ...


class Box(Protocol):
    """A live session's box: calls, files, background processes, its egress log."""

    @property
    def id(self) -> str: ...

    @property
    def spec(self) -> BoxSpec: ...

    @property
    def isolation(self) -> Isolation | None:
        """What isolation the box got (its tier, backend, a microVM's accelerator); None
        where the engine does not say (a server of an older golem)."""
        ...

    @property
    def limits(self) -> TakebackLimits:
        """What a takeback from this box may bring (from its spec)."""
        ...

    @property
    def closed(self) -> bool:
        """True once the session has ended (removed, closed, or gone on the server)."""
        ...

    @property
    def runtimes(self) -> dict[str, str]:
        """Interpreters found in the box (name -> path)."""
        ...

    def mask(self, text: str) -> str:
        """``text`` with this box's secrets replaced by ``***``."""
        ...

    async def execute(self, request: Request) -> ExecResult:
        """Run a call to completion and return its result."""
        ...

    def stream(self, request: Request) -> AsyncGenerator[ExecEvent, None]:
        """Run a call and yield its output as it comes, then one exit event."""
        ...

    def interact(self, request: Request) -> AbstractAsyncContextManager[Interaction]:
        """A call whose stdin stays open; leaving the block kills it if it runs on."""
        ...

    async def open_pty(self, request: Request) -> Terminal:
        """Start a call on a pseudo-terminal (an interactive shell)."""
        ...

    async def network_log(self) -> list[NetworkEvent]:
        """Every decision of this session's egress proxy so far."""
        ...

    def host_route(self, upstream: str, token: str) -> AbstractContextManager[str]:
        """A route from this ``filtered`` box to a service golem runs on this host's
        loopback (``http://127.0.0.1:<port>/...``) while the block lasts; yields the URL
        the box calls. The proxy puts ``Authorization: Bearer <token>`` on each request:
        the box never holds the token. ConfigError where the box cannot have one."""
        ...

    async def put_file(
        self, path: str, source: bytes | str | Path | AsyncIterable[bytes], mode: int = 0o644
    ) -> None:
        """Write ``source`` (bytes, text, a host file or an async byte stream) to ``path``."""
        ...

    async def get_file(self, path: str) -> bytes:
        """The content of a file in the box (at most the spec's ``max_file_bytes``)."""
        ...

    async def get_file_to(self, path: str, destination: Path) -> int:
        """Copy a file out of the box to a host path, streamed; returns its size."""
        ...

    def stream_file(self, path: str) -> AsyncIterator[bytes]:
        """A file's content in chunks as it arrives (at most ``max_file_bytes``)."""
        ...

    async def put_dir(
        self, source: Path, path: str, *, leave_out: Callable[[str], bool] | None = None
    ) -> None:
        """Copy a host directory's content into ``path``, but the entries ``leave_out``
        names (relative paths)."""
        ...

    async def put_archive(self, path: str, chunks: AsyncIterable[bytes]) -> None:
        """Unpack a tar stream into the directory ``path`` of the box."""
        ...

    def stream_archive(
        self, path: str, *, paths: list[str] | None = None, skip_git: Collection[str] = ()
    ) -> AsyncIterator[bytes]:
        """A directory as a tar stream (only ``paths`` of it, when given; the ``.git`` of
        each directory in ``skip_git`` left out). Untrusted: land it with takeback."""
        ...

    async def get_dir(self, path: str, destination: Path) -> Landed:
        """Copy a directory of the box into ``destination``, by the takeback's rules."""
        ...

    async def start(self, request: Request) -> BackgroundProcess:
        """Start a process that runs on in the background."""
        ...

    async def processes(self) -> list[BackgroundProcess]:
        """Background processes of this box, running or finished."""
        ...

    async def read_output(self, process_id: str, offset: int = 0) -> ProcessOutput:
        """A background process's output from ``offset`` on (secrets masked)."""
        ...

    async def signal(self, process_id: str, signal: int = signals.SIGTERM) -> None:
        """Send a signal to a background process and its process group."""
        ...

    async def wait(self, process_id: str, timeout: float | None = None) -> int | None:
        """Wait for a background process to end; its exit code, or None on timeout."""
        ...

    async def forget(self, process_id: str) -> None:
        """Kill a background process if it runs and drop its output."""
        ...


class Engine(Protocol):
    """Makes and ends sessions, runs one-off calls, lists and prunes boxes.

    Use as ``async with engine:``; ``async with engine.session(spec) as box:``."""

    @property
    def config(self) -> GolemConfig:
        """The configuration this side was made with (a remote engine's server has its own)."""
        ...

    async def __aenter__(self) -> Engine: ...

    async def __aexit__(self, *_exc: object) -> None: ...

    def spec(self, spec: SpecLike = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec of ``spec`` with ``overrides`` applied (the defaults: this engine's)."""
        ...

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Get ready for a long life (reaping, a warm pool where the engine keeps one)."""
        ...

    async def create_session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> Box:
        """A box that stays until ``remove_session``; ``on_event`` gets the setup script's
        events as they come."""
        ...

    def session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> AbstractAsyncContextManager[Box]:
        """``async with engine.session(spec) as box:`` one box for many calls."""
        ...

    async def get_session(self, box_id: str) -> Box:
        """A new handle on a live session (SessionNotFound when there is none)."""
        ...

    async def remove_session(self, box_id: str) -> None:
        """End a session; its handles are ``closed`` from then on."""
        ...

    async def snapshot(
        self, box_id: str, name: str, *, max_tenant_bytes: int | None = None
    ) -> SnapshotInfo:
        """Freeze a live session's writable trees as the snapshot ``name`` of its tenant,
        checked as a takeback is (docs/snapshots.md); a spec naming it (``snapshot``)
        starts a box from a copy of it. SnapshotUnsupported where the box's backend has
        none yet, naming those that have. ``max_tenant_bytes``: the most the tenant's
        snapshots may take with it (its oldest others removed to fit; one that alone does
        not fit: PolicyViolation); a server holds a key to its role's cap too."""
        ...

    async def fork(self, box_id: str) -> Box:
        """A new session whose box starts from a copy of a live session's files, checked
        as a snapshot is (docs/snapshots.md#forks): neither sees the other's later
        writes; ``remove_session`` throws it away. SnapshotUnsupported where the engine
        or the box's backend has none."""
        ...

    def on_session_end(self, callback: Callable[[str, str], None]) -> None:
        """Have ``callback(box_id, why)`` called when a session's box ends by itself (not
        through ``remove_session``): its supervisor gone, reaped at its age limit."""
        ...

    async def execute(self, request: Request, spec: SpecLike = None) -> ExecResult:
        """Run one call in a box of its own."""
        ...

    def stream(self, request: Request, spec: SpecLike = None) -> AsyncGenerator[ExecEvent, None]:
        """Run one call in a box of its own: setup events, then the call's events."""
        ...

    async def boxes(self) -> list[BoxInfo]:
        """The boxes this engine can see."""
        ...

    async def prune(self) -> list[BoxInfo]:
        """Remove boxes whose owner is gone; returns what was removed."""
        ...

    async def close(self) -> None:
        """Release what the engine holds."""
        ...


@dataclass(frozen=True)
class Mount:
    """A host path bound read-only into a box (the egress socket's directory, say)."""

    source: Path
    target: str
    optional: bool = False
    """Skip it where the target does not exist in the box's root (the process backend
    cannot create mount points in a read-only image)."""


class StartedBox(Protocol):
    """A running box as its backend sees it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def describe_loss(self) -> str:
        """Why the box stopped answering (for error messages)."""
        ...

    def oom_kills(self) -> int:
        """Processes of the box killed by the kernel for memory so far."""
        ...

    def peak_memory(self) -> int:
        """Peak memory of the whole box in bytes, 0 when unknown."""
        ...

    async def stop(self) -> None:
        """Kill the box and free everything it held. Safe to call twice."""
        ...


class Backend(Protocol):
    """Starts and cleans up boxes of one kind."""

    name: str

    def check(self) -> None:
        """Raise BackendUnavailable, with what to install, when this machine cannot run it."""
        ...

    async def start(
        self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount] = ()
    ) -> StartedBox:
        """Start a box whose first process is the supervisor, with ``mounts`` bound
        read-only; fill ``record.state``."""
        ...

    def close(self) -> None:
        """Release what the backend holds (a connection to an engine); boxes stay."""
        ...

    async def cleanup(self, record: BoxRecord) -> None:
        """Remove whatever an orphaned box of this backend left behind."""
        ...
