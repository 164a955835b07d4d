"""RemoteBox: a session on a golem server, a ``golem.sandbox.Box``.

Its execute and stream calls go over the session's call channel (one WebSocket, opened on
the first call; ``golem.sandbox.remote.channel``); files, archives and background processes over
HTTP; interactive calls and ptys over a WebSocket each."""

from __future__ import annotations

import asyncio
import contextlib
import signal as signals
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
)
from pathlib import Path
from typing import Any, TypeVar

from golem.core.errors import ConfigError, SessionNotFound
from golem.core.events import ExecEvent, NetworkEvent
from golem.core.isolation import Isolation
from golem.core.spec import BoxSpec
from golem.sandbox.box import as_request
from golem.sandbox.contracts import Request
from golem.sandbox.files import capped, chunks_of, tar_of
from golem.sandbox.masking import SecretMasker
from golem.sandbox.models import BackgroundProcess, ExecResult, ProcessOutput
from golem.sandbox.remote.calls import RemoteInteraction, RemoteTerminal
from golem.sandbox.remote.channel import CallChannel
from golem.sandbox.remote.connection import ServerConnection
from golem.sandbox.takeback import Landed, TakebackLimits, land_archive

__all__ = ["RemoteBox"]

T = TypeVar("T")


class RemoteBox:
    """A session on a golem server, used like a local box."""

    def __init__(
        self, server: ServerConnection, info: dict[str, Any], *, secrets: Collection[str] = ()
    ) -> None:
        self._server = server
        self.id: str = info["id"]
        self.spec = BoxSpec.model_validate(
            {k: v for k, v in info.get("spec", {}).items() if k != "secrets"}
        )
        self.limits = TakebackLimits.of(self.spec)
        shown = info.get("isolation")
        self.isolation = Isolation.model_validate(shown) if shown is not None else None
        self._runtimes: dict[str, str] = dict(info.get("runtimes") or {})
        self._secrets = [s for s in secrets if s]
        self._path = f"/v1/sessions/{self.id}"
        self._channel = CallChannel(
            server.websocket_url(f"{self._path}/calls"), server.key, server.error_of
        )
        self._ended = False

    @property
    def closed(self) -> bool:
        """True once the session was removed through this client's engine, or the server
        answered that it is gone."""
        return self._ended

    async def end(self) -> None:
        """This handle's session has ended: close its channel (RemoteEngine calls it)."""
        self._ended = True
        await self.disconnect()

    async def disconnect(self) -> None:
        """Close the call channel (the session stays; a next call opens it again)."""
        await self._channel.close()

    async def _watch(self, call: Awaitable[T]) -> T:
        """``call``'s result; a session the server no longer has marks this box closed."""
        try:
            return await call
        except SessionNotFound:
            self._ended = True
            raise

    @property
    def runtimes(self) -> dict[str, str]:
        """Interpreters found in the box."""
        return dict(self._runtimes)

    def mask(self, text: str) -> str:
        """``text`` with the secrets this client gave the box replaced by ``***``."""
        return SecretMasker(self._secrets).mask_text(text)

    async def execute(self, request: Request) -> ExecResult:
        """Run a call to completion and return its result."""
        return await self._watch(self._channel.execute(as_request(request)))

    async def stream(self, request: Request) -> AsyncGenerator[ExecEvent, None]:
        """Run a call and yield its output as it comes, then one exit event."""
        try:
            async with contextlib.aclosing(self._channel.stream(as_request(request))) as events:
                async for event in events:
                    yield event
        except SessionNotFound:
            self._ended = True
            raise

    def interact(self, request: Request) -> RemoteInteraction:
        """A call whose stdin stays open, over a WebSocket (see Box.interact)."""
        return RemoteInteraction(self._server, self._path, as_request(request))

    async def open_pty(self, request: Request) -> RemoteTerminal:
        """Start a call on a pseudo-terminal in the box (see Box.open_pty)."""
        terminal = RemoteTerminal(self._server, self._path, as_request(request))
        await terminal.connect()
        return terminal

    async def _request(self, method: str, suffix: str, **kwargs: Any) -> Any:
        response = await self._watch(self._server.request(method, self._path + suffix, **kwargs))
        return response.json() if response.content else None

    async def network_log(self) -> list[NetworkEvent]:
        """The egress proxy's decisions for this session so far."""
        return [NetworkEvent.model_validate(e) for e in await self._request("GET", "/network")]

    def host_route(self, upstream: str, token: str) -> contextlib.AbstractContextManager[str]:
        """Never here: a remote box's proxy runs on the server's host, which cannot reach
        a service on this one's loopback."""
        raise ConfigError(
            f"box {self.id} runs on a golem server, whose proxy cannot reach services on "
            "this host (a step's MCP tools for an external agent): run the step on a local "
            "engine, or give it golem's own agent"
        )

    # Files --------------------------------------------------------------------------------

    async def put_file(
        self, path: str, source: bytes | str | Path | AsyncIterable[bytes], mode: int = 0o644
    ) -> None:
        """Write ``source`` to ``path`` in the box."""
        params = {"path": path, "mode": mode}
        await self._request("PUT", "/files", params=params, content=chunks_of(source))

    async def _download(self, suffix: str, params: dict[str, Any]) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._server.download(self._path + suffix, params):
                yield chunk
        except SessionNotFound:
            self._ended = True
            raise

    async def stream_file(self, path: str) -> AsyncIterator[bytes]:
        """A file's content in chunks, as they arrive (at most the spec's max_file_bytes,
        and what the box could hold)."""
        download = self._download("/files", {"path": path})
        async for chunk in capped(download, path, self.limits):
            yield chunk

    async def get_file(self, path: str) -> bytes:
        """The content of a file in the box."""
        return b"".join([chunk async for chunk in self.stream_file(path)])

    async def get_file_to(self, path: str, destination: Path) -> int:
        """Copy a file out of the box to a host path, streamed; returns its size."""
        size = 0
        with destination.open("wb") as handle:
            async for chunk in self.stream_file(path):
                await asyncio.to_thread(handle.write, chunk)
                size += len(chunk)
        return size

    async def put_archive(self, path: str, chunks: AsyncIterable[bytes]) -> None:
        """Unpack a tar stream into a directory of the box."""
        await self._request("PUT", "/archive", params={"path": path}, content=chunks_of(chunks))

    async def put_dir(
        self, source: Path, path: str, *, leave_out: Callable[[str], bool] | None = None
    ) -> None:
        """Copy a host directory's content into ``path`` in the box (see Box.put_dir)."""
        # closed here: a copy cancelled mid-way leaves no spool file open
        async with contextlib.aclosing(tar_of(source, leave_out=leave_out)) as chunks:
            await self.put_archive(path, chunks)

    async def stream_archive(
        self, path: str, *, paths: list[str] | None = None, skip_git: Collection[str] = ()
    ) -> AsyncIterator[bytes]:
        """A directory of the box as a tar stream, in chunks as they arrive (see
        Box.stream_archive)."""
        params: dict[str, Any] = {"path": path, "skip_git": sorted(set(skip_git))}
        if paths is not None:
            params["paths"] = paths
        async for chunk in self._download("/archive", params):
            yield chunk

    async def get_dir(self, path: str, destination: Path) -> Landed:
        """Copy a directory of the box into ``destination``, by the rules of
        ``golem.sandbox.takeback`` (as a local box's)."""
        return await land_archive(self.stream_archive(path), destination, self.limits)

    # Background processes ---------------------------------------------------------------

    async def start(self, request: Request) -> BackgroundProcess:
        """Start a background process."""
        body = as_request(request).model_dump(mode="json", exclude_defaults=True)
        return BackgroundProcess.model_validate(
            await self._request("POST", "/processes", json=body)
        )

    async def processes(self) -> list[BackgroundProcess]:
        """Background processes of this box."""
        return [
            BackgroundProcess.model_validate(p) for p in await self._request("GET", "/processes")
        ]

    async def read_output(self, process_id: str, offset: int = 0) -> ProcessOutput:
        """A background process's output from ``offset`` on."""
        output = await self._request(
            "GET", f"/processes/{process_id}/output", params={"offset": offset}
        )
        return ProcessOutput.model_validate(output)

    async def signal(self, process_id: str, signal: int = signals.SIGTERM) -> None:
        """Send a signal to a background process."""
        await self._request("POST", f"/processes/{process_id}/signal", json={"signal": int(signal)})

    async def wait(self, process_id: str, timeout: float | None = None) -> int | None:
        """Wait for a background process to end; its exit code, or None on timeout."""
        waited = await self._request(
            "POST", f"/processes/{process_id}/wait", json={"timeout": timeout}
        )
        code: int | None = waited["exit_code"]
        return code

    async def forget(self, process_id: str) -> None:
        """Kill a background process if it runs and drop its output."""
        await self._request("DELETE", f"/processes/{process_id}")
