"""Box: a live sandbox and everything one can do in it (exec, stream, files, processes).

This is the only exec path: ``execute`` collects ``stream``, background processes and the
interactive shell use the same request messages, and every backend hands the same pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence

from golem.core.errors import (
    BoxCrashed,
    ConfigError,
    ExecTimeout,
    InvalidRequest,
    RuntimeNotAvailable,
    SandboxError,
)
from golem.core.events import (
    ErrorEvent,
    ExecEvent,
    ExitEvent,
    NetworkEvent,
    OutputEvent,
    Phase,
    ResourceUsage,
)
from golem.core.isolation import Isolation
from golem.core.spec import BoxSpec, resolve_workdir
from golem.sandbox.background import BoxProcesses
from golem.sandbox.contracts import StartedBox
from golem.sandbox.files import BoxFiles, capped
from golem.sandbox.interaction import LocalInteraction
from golem.sandbox.masking import SecretMasker
from golem.sandbox.models import BackgroundProcess, ExecRequest, ExecResult
from golem.sandbox.network import BoxNetwork
from golem.sandbox.supervisor import Frame, SessionClient
from golem.sandbox.supervisor.messages import (
    Error,
    Exec,
    Exit,
    NetworkNotice,
    Out,
    Signal,
    Started,
    Tool,
    expect,
)
from golem.sandbox.takeback import TakebackLimits
from golem.sandbox.terminal import SPAWN_FAILED, LocalTerminal

__all__ = ["LocalBox", "LocalInteraction", "LocalTerminal", "as_request"]

HOST_GRACE = 10.0  # past the call's own timeout, the host stops trusting the supervisor
KILL_WAIT = 5.0  # seconds a killed call's exit is waited for when its block is left


def as_request(request: ExecRequest | str | Sequence[str]) -> ExecRequest:
    """Accept a request, a shell string or an argv list."""
    if isinstance(request, ExecRequest):
        return request
    if isinstance(request, str):
        return ExecRequest(cmd=request)
    return ExecRequest(cmd=list(request))


class LocalBox(BoxFiles, BoxProcesses):
    """A running box. Get one from ``Engine.session`` or ``Engine.create_session``."""

    def __init__(
        self,
        box_id: str,
        spec: BoxSpec,
        client: SessionClient,
        started: StartedBox,
        *,
        network: BoxNetwork | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        BoxFiles.__init__(self, client, spec.workdir, limits=TakebackLimits.of(spec))
        self.id = box_id
        self.spec = spec
        self.isolation = isolation
        self._client = client
        self._started = started
        self._network = network
        brokered = network.secrets if network is not None else []
        self._secrets = [v for v in [*spec.secret_values().values(), *brokered] if v]
        BoxProcesses.__init__(self, client, self._secrets)

    async def network_log(self) -> list[NetworkEvent]:
        """Every decision of this session's egress proxy so far (``filtered`` boxes)."""
        return list(self._network.proxy.log) if self._network is not None else []

    @contextlib.contextmanager
    def host_route(self, upstream: str, token: str) -> Iterator[str]:
        """A route from this ``filtered`` box to a service golem runs on this host's
        loopback (``http://127.0.0.1:<port>/...``), for as long as the block lasts; yields
        the URL the box calls. Requests on it get ``Authorization: Bearer <token>`` from
        the proxy: the box never holds the token, and its output has it masked."""
        if self._network is None:
            raise ConfigError(
                f"box {self.id} has network={self.spec.network!r}: a route to a service of "
                "golem's (a step's MCP tools for an external agent) needs network = 'filtered'"
            )
        self._secrets.append(token)
        with self._network.host_route(upstream, token) as url:
            yield url

    @property
    def closed(self) -> bool:
        """True once the session has ended (for every handle of it), or its box did."""
        return not self._client.active or self._client.lost is not None

    @property
    def runtimes(self) -> dict[str, str]:
        """Interpreters found in the box (name -> path)."""
        return dict(self._client.hello.runtimes) if self._client.hello else {}

    def mask(self, text: str) -> str:
        """``text`` with this box's secrets replaced by ``***``."""
        return SecretMasker(self._secrets).mask_text(text)

    async def execute(self, request: ExecRequest | str | Sequence[str]) -> ExecResult:
        """Run a call to completion and return its result (files, output, limits hit)."""
        return await self._collect(as_request(request), "code")

    async def _collect(self, request: ExecRequest, phase: Phase) -> ExecResult:
        stdout: list[bytes] = []
        stderr: list[bytes] = []
        network: list[NetworkEvent] = []
        exit_event: ExitEvent | None = None
        async with contextlib.aclosing(self.stream(request, phase=phase)) as events:
            async for event in events:
                if isinstance(event, OutputEvent):
                    (stdout if event.type == "stdout" else stderr).append(event.data)
                elif isinstance(event, ExitEvent):
                    exit_event = event
                elif isinstance(event, NetworkEvent):
                    network.append(event)
                else:
                    stderr.append(f"{event.message}\n".encode())
        assert exit_event is not None  # stream ends with an exit event or raises
        if self._network is not None:  # the bytes each connection moved until now
            network = [self._network.proxy.current(event) for event in network]
        files = await self._returned_files(request)
        outcome = exit_event.model_dump(exclude={"type", "time", "phase"})
        return ExecResult(
            stdout=b"".join(stdout),
            stderr=b"".join(stderr),
            files=files,
            network=network,
            isolation=self.isolation,
            **outcome,
        )

    async def _returned_files(self, request: ExecRequest) -> dict[str, bytes]:
        """The call's ``return_files``, at most ``max_file_bytes`` in all (they are held in
        memory), each a regular file."""
        files: dict[str, bytes] = {}
        total = 0
        for path in request.return_files:
            where = self._in_workdir(request, path)
            stream = capped(self.stream_file(where), where, self.limits, already=total)
            files[path] = b"".join([chunk async for chunk in stream])
            total += len(files[path])
        return files

    async def stream(
        self, request: ExecRequest | str | Sequence[str], *, phase: Phase = "code"
    ) -> AsyncGenerator[ExecEvent, None]:
        """Run a call and yield its output as it comes, then one exit event."""
        request = as_request(request)
        async with self._call(request, phase, keep_stdin=False) as call:
            if request.stdin is not None:
                await call.write(request.stdin)
                await call.close_stdin()
            async with contextlib.aclosing(call.events()) as events:
                async for event in events:
                    yield event

    def interact(
        self, request: ExecRequest | str | Sequence[str]
    ) -> contextlib.AbstractAsyncContextManager[LocalInteraction]:
        """A call whose stdin stays open: ``async with box.interact(req) as call:`` then
        ``call.write``, ``call.close_stdin``, ``call.signal`` while reading
        ``call.events()``. Leaving the block kills a call that has not ended."""
        return self._call(as_request(request), "code", keep_stdin=True)

    @contextlib.asynccontextmanager
    async def _call(
        self, request: ExecRequest, phase: Phase, *, keep_stdin: bool
    ) -> AsyncIterator[LocalInteraction]:
        message, payload = await self._prepare(request, keep_stdin=keep_stdin)
        call_id = self._client.new_id()
        queue = self._client.open(call_id)
        unsubscribe = self._subscribe_network(queue)
        oom_before = self._started.oom_kills()
        call = LocalInteraction(
            self._client, call_id, lambda: self._events(queue, request, phase, oom_before)
        )
        try:
            await self._client.send(call_id, message, payload)
            yield call
        finally:
            unsubscribe()
            try:
                if not call.finished and self._client.lost is None:
                    with contextlib.suppress(SandboxError):
                        await self._client.send(call_id, Signal(signal=signals.SIGKILL))
                        await _killed(queue)
            finally:
                self._client.close_call(call_id)

    def _subscribe_network(self, queue: asyncio.Queue[Frame | None]) -> Callable[[], None]:
        """Route the proxy's decisions into a call's queue while it runs. They travel as
        Python objects, which no frame from the box can carry, so they cannot be forged."""
        if self._network is None:
            return lambda: None
        return self._network.proxy.subscribe(
            lambda event: queue.put_nowait((NetworkNotice(event=event), b""))
        )

    async def _prepare(
        self,
        request: ExecRequest,
        *,
        background: bool = False,
        pty: bool = False,
        keep_stdin: bool = False,
    ) -> tuple[Exec | Tool, bytes]:
        try:
            workdir = resolve_workdir(request.workdir or self.spec.workdir)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        if request.runtime is not None and request.runtime not in self.runtimes:
            available = ", ".join(sorted(self.runtimes)) or "none"
            raise RuntimeNotAvailable(
                f"the box's image has no {request.runtime} runtime (found: {available}); "
                "choose an image that has it or another --runtime"
            )
        for path, content in request.files.items():
            await self.put_file(self._in_workdir(request, path), content)
        timeout = request.timeout or (None if background else self.spec.timeout)
        cap = self.spec.max_output_bytes
        if request.tool is not None:
            if background or pty:
                raise InvalidRequest("a tool request runs in the foreground, without a pty")
            return Tool(request=request.tool, cwd=workdir, timeout=timeout, max_output=cap), b""
        message = Exec(
            argv=request.argv(),
            env=request.env,
            cwd=workdir,
            timeout=timeout,
            idle_timeout=request.idle_timeout or self.spec.idle_timeout,
            max_output=cap,
            stdin="pipe" if (request.stdin is not None or pty or keep_stdin) else "null",
            background=background,
            pty=pty,
            runtime=request.runtime if request.code is not None else None,
        )
        return message, request.code.encode() if request.code is not None else b""

    def _in_workdir(self, request: ExecRequest, path: str) -> str:
        if path.startswith("/"):
            return path
        return resolve_workdir(f"{request.workdir or self.spec.workdir}/{path}")

    async def _events(
        self,
        queue: asyncio.Queue[Frame | None],
        request: ExecRequest,
        phase: Phase,
        oom_before: int,
    ) -> AsyncGenerator[ExecEvent, None]:
        outputs = {"stdout": SecretMasker(self._secrets), "stderr": SecretMasker(self._secrets)}
        limit = (request.timeout or self.spec.timeout) + HOST_GRACE
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        received = 0
        while True:
            try:  # not wait_for: on 3.11 it loses a cancel that meets a frame arriving
                async with asyncio.timeout_at(deadline):
                    frame = await queue.get()
            except TimeoutError:
                await self._started.stop()
                raise ExecTimeout(
                    f"box {self.id} did not end a call within {limit:.0f}s although its "
                    "supervisor was told to; the box was stopped"
                ) from None
            if frame is None:
                reason = self.mask(self._client.lost or "the box went away")
                yield ErrorEvent(message=reason, kind="box_crashed", phase=phase)
                raise BoxCrashed(f"box {self.id} went away during a call: {reason}")
            message, data = frame
            if isinstance(message, NetworkNotice):
                yield message.event.model_copy(update={"phase": phase})
            elif isinstance(message, Out):
                received += len(data)
                if received > self.spec.max_output_bytes:  # a supervisor that ignores its cap
                    continue
                if masked := outputs[message.stream].feed(data):
                    yield OutputEvent(type=message.stream, data=masked, phase=phase)
            elif isinstance(message, Error):
                async for event in self._start_failed(message, phase):
                    yield event
                return
            elif isinstance(message, Exit):
                for stream, masker in outputs.items():
                    if rest := masker.flush():
                        yield OutputEvent(type=stream, data=rest, phase=phase)
                yield self._exit_event(message, phase, oom_before)
                return

    async def _start_failed(self, message: Error, phase: Phase) -> AsyncGenerator[ExecEvent, None]:
        text = self.mask(message.message)
        if message.kind == "Invalid":
            raise InvalidRequest(text)
        yield ErrorEvent(message=text, kind=message.kind, phase=phase)
        yield ExitEvent(exit_code=SPAWN_FAILED, duration=0.0, phase=phase)

    def _exit_event(self, message: Exit, phase: Phase, oom_before: int) -> ExitEvent:
        # The kernel may have killed a child of the call (a shell's python, say): any OOM
        # kill in the box while the call ran counts for it.
        oom = not message.timed_out and self._started.oom_kills() > oom_before
        return ExitEvent(
            exit_code=message.exit_code,
            signal=message.signal,
            duration=message.duration,
            timed_out=message.timed_out,
            idle_timed_out=message.idle_timed_out,
            truncated=message.truncated,
            oom_killed=oom,
            usage=ResourceUsage(
                cpu_user_seconds=message.cpu_user,
                cpu_system_seconds=message.cpu_system,
                peak_memory_bytes=message.max_rss_kb * 1024,
            ),
            phase=phase,
        )

    # Background processes -------------------------------------------------------------

    async def start(self, request: ExecRequest | str | Sequence[str]) -> BackgroundProcess:
        """Start a process that runs on in the background; its output is kept in the box."""
        message, payload = await self._prepare(as_request(request), background=True)
        assert isinstance(message, Exec), "a tool request does not run in the background"
        call_id = self._client.new_id()
        reply, _ = await self._client.request(message, payload, call_id=call_id)
        return BackgroundProcess(
            id=call_id, argv=message.argv, pid=expect(reply, Started).pid, running=True
        )

    # Interactive -------------------------------------------------------------------------

    async def open_pty(self, request: ExecRequest | str | Sequence[str]) -> LocalTerminal:
        """Start a call on a pseudo-terminal in the box, for an interactive shell."""
        message, payload = await self._prepare(as_request(request), pty=True)
        assert isinstance(message, Exec), "a tool request does not run on a pty"
        call_id = self._client.new_id()
        queue = self._client.open(call_id)
        await self._client.send(call_id, message.model_copy(update={"timeout": None}), payload)
        return LocalTerminal(self._client, call_id, queue, self._secrets)


async def _killed(queue: asyncio.Queue[Frame | None]) -> None:
    """Wait, at most KILL_WAIT seconds, for a killed call's end: its process is then gone
    (reaped by the supervisor) before the caller goes on to its next call."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_WAIT):
            while (frame := await queue.get()) is not None:
                if isinstance(frame[0], Exit | Error):
                    return
