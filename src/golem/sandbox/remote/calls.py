"""Interactive calls in a remote session, each over a WebSocket of its own
(``/v1/sessions/{id}/exec/ws``): ``RemoteInteraction`` (an ``Interaction``) and
``RemoteTerminal`` (a ``Terminal``)."""

from __future__ import annotations

import contextlib
import json
import signal as signals
from collections.abc import AsyncGenerator
from typing import Any

import websockets
from pydantic import TypeAdapter

from golem.core.events import ExecEvent, ExitEvent, OutputEvent
from golem.sandbox.models import ExecRequest
from golem.sandbox.remote.connection import ServerConnection
from golem.sandbox.remote.frames import CallMessage, OpenCall, Resize

__all__ = ["RemoteInteraction", "RemoteTerminal"]

_EVENT: TypeAdapter[ExecEvent] = TypeAdapter(ExecEvent)


class _Socket:
    """The WebSocket of an interactive call."""

    def __init__(self, server: ServerConnection, path: str) -> None:
        self._url = server.websocket_url(f"{path}/exec/ws")
        self._key = server.key
        self.socket: Any = None

    async def open(self, first: OpenCall) -> None:
        headers = {"Authorization": f"Bearer {self._key}"}
        self.socket = await websockets.connect(self._url, additional_headers=headers)
        await self.socket.send(first.model_dump_json(exclude_defaults=True))

    async def send(self, message: CallMessage) -> None:
        # A call that has just ended (the server closed normally) takes no more, as a
        # local call's stdin and signals after its exit are dropped.
        with contextlib.suppress(websockets.ConnectionClosedOK):
            await self.socket.send(message.model_dump_json(exclude_none=True))

    async def close(self) -> None:
        if self.socket is not None:
            with contextlib.suppress(Exception):
                await self.socket.close()


class RemoteInteraction(_Socket):
    """``async with box.interact(request) as call:`` over a WebSocket."""

    def __init__(self, server: ServerConnection, path: str, request: ExecRequest) -> None:
        super().__init__(server, path)
        self._first = OpenCall(request=request, pty=False)
        self.finished = False

    async def __aenter__(self) -> RemoteInteraction:
        await self.open(self._first)
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def events(self) -> AsyncGenerator[ExecEvent, None]:
        """The call's events: output as it comes, then its exit."""
        async for message in self.socket:
            event = _EVENT.validate_json(message)
            if isinstance(event, ExitEvent):
                self.finished = True
            yield event

    async def write(self, data: bytes) -> None:
        """Send bytes to the call's stdin."""
        await self.send(CallMessage(stdin=data))

    async def close_stdin(self) -> None:
        """End the call's stdin."""
        await self.send(CallMessage(stdin_close=True))

    async def signal(self, number: int = signals.SIGTERM) -> None:
        """Send a signal to the call."""
        await self.send(CallMessage(signal=int(number)))


class RemoteTerminal(_Socket):
    """An interactive call on a pty in a remote box (see Terminal)."""

    def __init__(self, server: ServerConnection, path: str, request: ExecRequest) -> None:
        super().__init__(server, path)
        self._request = request
        self.exit_code: int | None = None

    async def connect(self, rows: int = 24, cols: int = 80) -> None:
        """Open the pty."""
        await self.open(OpenCall(request=self._request, pty=True, rows=rows, cols=cols))

    async def write(self, data: bytes) -> None:
        """Send keystrokes."""
        await self.send(CallMessage(stdin=data))

    async def resize(self, rows: int, cols: int) -> None:
        """Tell the pty its window size."""
        await self.send(CallMessage(resize=Resize(rows=rows, cols=cols)))

    async def signal(self, number: int) -> None:
        """Send a signal to the call."""
        await self.send(CallMessage(signal=int(number)))

    async def read(self) -> bytes | None:
        """Next output bytes, or None once the call has ended."""
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
