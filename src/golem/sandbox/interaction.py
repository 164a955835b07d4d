"""A call in a box as it runs: its events, and, for an interactive call, its stdin and
signals (the API's WebSocket). Box.stream and Box.interact both go through it."""

from __future__ import annotations

import signal as signals
from collections.abc import AsyncGenerator, Callable

from golem.core.events import ExecEvent, ExitEvent
from golem.sandbox.supervisor import SessionClient
from golem.sandbox.supervisor.messages import Signal, Stdin, StdinClose

__all__ = ["STDIN_CHUNK", "LocalInteraction"]

STDIN_CHUNK = 64 * 1024


class LocalInteraction:
    """One running call: read its events; write its stdin, close it, signal it."""

    def __init__(
        self,
        client: SessionClient,
        call_id: str,
        events: Callable[[], AsyncGenerator[ExecEvent, None]],
    ) -> None:
        self._client = client
        self.id = call_id
        self._events = events
        self.finished = False

    async def events(self) -> AsyncGenerator[ExecEvent, None]:
        """The call's events: output as it comes, then its exit."""
        async for event in self._events():
            if isinstance(event, ExitEvent):
                self.finished = True
            yield event

    async def write(self, data: bytes) -> None:
        """Send bytes to the call's stdin."""
        for start in range(0, len(data), STDIN_CHUNK):
            await self._client.send(self.id, Stdin(), data[start : start + STDIN_CHUNK])

    async def close_stdin(self) -> None:
        """End the call's stdin (EOF)."""
        await self._client.send(self.id, StdinClose())

    async def signal(self, number: int = signals.SIGTERM) -> None:
        """Send a signal to the call's process group."""
        await self._client.send(self.id, Signal(signal=int(number)))
