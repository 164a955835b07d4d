"""RemoteBox: the Box's interface for a session on a golem server."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal as signals
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import websockets
from pydantic import TypeAdapter

from golem.core.events import ExecEvent, ExitEvent, NetworkEvent, OutputEvent
from golem.core.spec import BoxSpec
from golem.sandbox import BackgroundProcess, ExecRequest, ExecResult, ProcessOutput
from golem.sandbox.box import as_request
from golem.sandbox.files import capped, chunks_of, tar_of
from golem.sandbox.masking import SecretMasker
from golem.sandbox.takeback import Landed, TakebackLimits, land_archive

if TYPE_CHECKING:
    from golem.service.client import RemoteEngine

__all__ = ["RemoteBox", "RemoteInteraction", "RemoteTerminal"]

_EVENT: TypeAdapter[ExecEvent] = TypeAdapter(ExecEvent)


class RemoteBox:
    """A session on a golem server, used like a local Box."""

    def __init__(
        self, engine: RemoteEngine, info: dict[str, Any], *, secrets: Sequence[str] = ()
    ) -> None:
        self._engine = engine
        self.id: str = info["id"]
        self.spec = BoxSpec.model_validate(
            {k: v for k, v in info.get("spec", {}).items() if k != "secrets"}
        )
        self._runtimes: dict[str, str] = dict(info.get("runtimes") or {})
        self._secrets = [s for s in secrets if s]
        self._path = f"/v1/sessions/{self.id}"

    @property
    def closed(self) -> bool:
        """Whether the session ended (as far as this client knows)."""
        return False

    @property
    def runtimes(self) -> dict[str, str]:
        """Interpreters found in the box."""
        return dict(self._runtimes)

    def mask(self, text: str) -> str:
        """``text`` with the secrets this client gave the box replaced by ``***``."""
        return SecretMasker(self._secrets).mask_text(text)

    async def execute(self, request: ExecRequest | str | Sequence[str]) -> ExecResult:
        """Run a call to completion and return its result."""
        body = as_request(request).model_dump(mode="json", exclude_defaults=True)
        response = await self._engine.request("POST", f"{self._path}/exec", json=body)
        return ExecResult.model_validate(response.json())

    async def stream(self, request: ExecRequest | str | Sequence[str]) -> AsyncIterator[ExecEvent]:
        """Run a call and yield its output as it comes, then one exit event."""
        body = as_request(request).model_dump(mode="json", exclude_defaults=True)
        async for event in self._engine.sse(f"{self._path}/exec/stream", body):
            yield event

    def interact(self, request: ExecRequest | str | Sequence[str]) -> RemoteInteraction:
        """A call whose stdin stays open, over a WebSocket (see Box.interact)."""
        return RemoteInteraction(self._engine, self._path, as_request(request), pty=False)

    async def open_pty(self, request: ExecRequest | str | Sequence[str]) -> RemoteTerminal:
        """Start a call on a pseudo-terminal in the box (see Box.open_pty)."""
        terminal = RemoteTerminal(self._engine, self._path, as_request(request))
        await terminal.connect()
        return terminal

    async def network_log(self) -> list[NetworkEvent]:
        """The egress proxy's decisions for this session so far."""
        response = await self._engine.request("GET", f"{self._path}/network")
        return [NetworkEvent.model_validate(e) for e in response.json()]

    # Files --------------------------------------------------------------------------------

    async def put_file(
        self, path: str, source: bytes | str | Path | AsyncIterable[bytes], mode: int = 0o644
    ) -> None:
        """Write ``source`` to ``path`` in the box."""
        params = {"path": path, "mode": mode}
        await self._engine.request(
            "PUT", f"{self._path}/files", params=params, content=chunks_of(source)
        )

    async def stream_file(self, path: str) -> AsyncIterator[bytes]:
        """A file's content in chunks, as they arrive (at most the spec's max_file_bytes)."""
        download = self._engine.download(f"{self._path}/files", {"path": path})
        async for chunk in capped(download, path, self.spec.max_file_bytes):
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
        await self._engine.request(
            "PUT", f"{self._path}/archive", params={"path": path}, content=chunks_of(chunks)
        )

    async def put_dir(
        self, source: Path, path: str, *, leave_out: Callable[[str], bool] | None = None
    ) -> None:
        """Copy a host directory's content into ``path`` in the box (see Box.put_dir)."""
        await self.put_archive(path, tar_of(source, leave_out=leave_out))

    async def stream_archive(self, path: str) -> AsyncIterator[bytes]:
        """A directory of the box as a tar stream, in chunks as they arrive."""
        async for chunk in self._engine.download(f"{self._path}/archive", {"path": path}):
            yield chunk

    async def get_dir(self, path: str, destination: Path) -> Landed:
        """Copy a directory of the box into ``destination``, by the rules of
        ``golem.sandbox.takeback`` (as a local box's)."""
        limits = TakebackLimits.of(self.spec)
        return await land_archive(self.stream_archive(path), destination, limits)

    # Background processes ---------------------------------------------------------------

    async def start(self, request: ExecRequest | str | Sequence[str]) -> BackgroundProcess:
        """Start a background process."""
        body = as_request(request).model_dump(mode="json", exclude_defaults=True)
        response = await self._engine.request("POST", f"{self._path}/processes", json=body)
        return BackgroundProcess.model_validate(response.json())

    async def processes(self) -> list[BackgroundProcess]:
        """Background processes of this box."""
        response = await self._engine.request("GET", f"{self._path}/processes")
        return [BackgroundProcess.model_validate(p) for p in response.json()]

    async def read_output(self, process_id: str, offset: int = 0) -> ProcessOutput:
        """A background process's output from ``offset`` on."""
        response = await self._engine.request(
            "GET", f"{self._path}/processes/{process_id}/output", params={"offset": offset}
        )
        return ProcessOutput.model_validate(response.json())

    async def signal(self, process_id: str, signal: int = signals.SIGTERM) -> None:
        """Send a signal to a background process."""
        await self._engine.request(
            "POST", f"{self._path}/processes/{process_id}/signal", json={"signal": int(signal)}
        )

    async def wait(self, process_id: str, timeout: float | None = None) -> int | None:
        """Wait for a background process to end; its exit code, or None on timeout."""
        response = await self._engine.request(
            "POST", f"{self._path}/processes/{process_id}/wait", json={"timeout": timeout}
        )
        code: int | None = response.json()["exit_code"]
        return code

    async def forget(self, process_id: str) -> None:
        """Kill a background process if it runs and drop its output."""
        await self._engine.request("DELETE", f"{self._path}/processes/{process_id}")


class _Socket:
    """The WebSocket of an interactive call."""

    def __init__(self, engine: RemoteEngine, path: str) -> None:
        self._url = engine.websocket_url(f"{path}/exec/ws")
        self._key = engine.key
        self.socket: Any = None

    async def open(self, first: dict[str, Any]) -> None:
        headers = {"Authorization": f"Bearer {self._key}"}
        self.socket = await websockets.connect(self._url, additional_headers=headers)
        await self.socket.send(_json(first))

    async def send(self, message: dict[str, Any]) -> None:
        await self.socket.send(_json(message))

    async def close(self) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                await self.socket.close()


def _json(message: dict[str, Any]) -> str:
    import json  # noqa: PLC0415 - only here

    return json.dumps(message)


class RemoteInteraction(_Socket):
    """``async with box.interact(request) as call:`` over a WebSocket."""

    def __init__(self, engine: RemoteEngine, path: str, request: ExecRequest, *, pty: bool) -> None:
        super().__init__(engine, path)
        self._first = {
            "request": request.model_dump(mode="json", exclude_defaults=True),
            "pty": pty,
        }
        self.finished = False

    async def __aenter__(self) -> RemoteInteraction:
        await self.open(self._first)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def events(self) -> AsyncIterator[ExecEvent]:
        """The call's events: output as it comes, then its exit."""
        async for message in self.socket:
            event = _EVENT.validate_json(message)
            if isinstance(event, ExitEvent):
                self.finished = True
            yield event

    async def write(self, data: bytes) -> None:
        """Send bytes to the call's stdin."""
        await self.send({"stdin": base64.b64encode(data).decode()})

    async def close_stdin(self) -> None:
        """End the call's stdin."""
        await self.send({"stdin_close": True})

    async def signal(self, number: int = signals.SIGTERM) -> None:
        """Send a signal to the call."""
        await self.send({"signal": int(number)})


class RemoteTerminal(_Socket):
    """An interactive call on a pty in a remote box (see Terminal)."""

    def __init__(self, engine: RemoteEngine, path: str, request: ExecRequest) -> None:
        super().__init__(engine, path)
        self._request = request
        self.exit_code: int | None = None

    async def connect(self, rows: int = 24, cols: int = 80) -> None:
        """Open the pty."""
        body = self._request.model_dump(mode="json", exclude_defaults=True)
        await self.open({"request": body, "pty": True, "rows": rows, "cols": cols})

    async def write(self, data: bytes) -> None:
        """Send keystrokes."""
        await self.send({"stdin": base64.b64encode(data).decode()})

    async def resize(self, rows: int, cols: int) -> None:
        """Tell the pty its window size."""
        await self.send({"resize": {"rows": rows, "cols": cols}})

    async def signal(self, number: int) -> None:
        """Send a signal to the call."""
        await self.send({"signal": int(number)})

    async def read(self) -> bytes | None:
        """Next output bytes, or None once the call has ended."""
        import json  # noqa: PLC0415

        if self.exit_code is not None:
            return None
        async for message in self.socket:
            body = json.loads(message)
            if body.get("type") == "exit":
                self.exit_code = int(body.get("exit_code") or 0)
                await self.close()
                return None
            if body.get("type") == "stdout":
                return OutputEvent.model_validate_json(message).data
        self.exit_code = -1
        return None
