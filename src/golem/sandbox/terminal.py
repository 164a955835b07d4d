"""Terminal: an interactive call on a pty in a box (``golem shell``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from golem.sandbox.masking import SecretMasker
from golem.sandbox.supervisor import Frame, SessionClient
from golem.sandbox.supervisor.messages import Error, Exit, Out, Resize, Signal, Stdin

__all__ = ["SPAWN_FAILED", "LocalTerminal"]

SPAWN_FAILED = 127


class LocalTerminal:
    """An interactive call on a pty: write keystrokes, read the screen's bytes, resize."""

    def __init__(
        self,
        client: SessionClient,
        call_id: str,
        queue: asyncio.Queue[Frame | None],
        secrets: Sequence[str],
    ) -> None:
        self._client = client
        self.id = call_id
        self._queue = queue
        self._masker = SecretMasker(secrets)
        self.exit_code: int | None = None

    async def write(self, data: bytes) -> None:
        """Send keystrokes."""
        await self._client.send(self.id, Stdin(), data)

    async def signal(self, number: int) -> None:
        """Send a signal to the call's process group."""
        await self._client.send(self.id, Signal(signal=int(number)))

    async def resize(self, rows: int, cols: int) -> None:
        """Tell the pty its window size."""
        await self._client.send(self.id, Resize(rows=rows, cols=cols))

    async def read(self) -> bytes | None:
        """Next output bytes (secrets masked), or None once the call has ended."""
        while self.exit_code is None:
            frame = await self._queue.get()
            if frame is None:
                self.exit_code = -1
                break
            message, data = frame
            if isinstance(message, Out):
                if masked := self._masker.feed(data):
                    return masked
            elif isinstance(message, Exit):
                self.exit_code = message.exit_code
            elif isinstance(message, Error):
                self.exit_code = SPAWN_FAILED
        tail = self._masker.flush()
        self._client.close_call(self.id)
        return tail or None
