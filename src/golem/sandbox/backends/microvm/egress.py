"""The host's end of a microVM's socket port: each channel the box opens over the port
becomes one connection to a host unix socket (the box's egress proxy).

Everything on the port comes from the guest and is untrusted: frame kinds and sizes are
checked, a channel that sends past its window is closed, at most MAX_CHANNELS are open at
once, and a malformed frame ends the whole port (the box loses its way out, nothing else).
What the host holds per channel is bounded by the window; the wire format is the
supervisor's (``supervisor/box/portmux.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

from golem.sandbox.supervisor.box.portmux import (
    CLOSE,
    CREDIT,
    DATA,
    EOF,
    HEADER,
    KINDS,
    MAX_CHANNELS,
    MAX_DATA,
    OPEN,
    WINDOW,
    frame,
)

__all__ = ["PortMux"]

CONNECT_TIMEOUT = 30.0


class _Channel:
    """One box connection on the host: its proxy connection and both windows."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.to_proxy: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the box's EOF
        self.queued = 0  # bytes from the box not yet written to the proxy
        self.window = WINDOW  # bytes the box still takes from us
        self.credited = asyncio.Event()
        self.credited.set()
        self.tasks: list[asyncio.Task[None]] = []


class PortMux:
    """Serves one port: ``start`` it over the host's end of the port's socket."""

    def __init__(self, sock: socket.socket, target: Path) -> None:
        self._sock = sock
        self.target = target
        self._channels: dict[int, _Channel] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._task: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()

    async def start(self) -> None:
        """Read the port's frames in a task of its own until ``close``."""
        reader, self._writer = await asyncio.open_unix_connection(sock=self._sock)
        self._task = asyncio.create_task(self._serve(reader))

    async def close(self) -> None:
        """Stop serving and drop every channel."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for channel in list(self._channels.values()):
            await self._drop(channel)
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self._writer.wait_closed()

    async def _send(self, data: bytes) -> None:
        assert self._writer is not None
        async with self._send_lock:
            self._writer.write(data)
            await self._writer.drain()

    async def _serve(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
            while True:
                kind, number, length = HEADER.unpack(await reader.readexactly(HEADER.size))
                if kind not in KINDS or (kind == DATA and length > MAX_DATA):
                    return  # not a supervisor's frame: this port is done
                payload = await reader.readexactly(length) if kind == DATA else b""
                await self._frame(kind, number, length, payload)

    async def _frame(self, kind: int, number: int, length: int, payload: bytes) -> None:
        channel = self._channels.get(number)
        if kind == OPEN:
            if channel is not None or len(self._channels) >= MAX_CHANNELS:
                await self._send(frame(CLOSE, number))
                return
            channel = self._channels[number] = _Channel(number)
            channel.tasks.append(asyncio.create_task(self._run(channel)))
        elif channel is None:
            return  # a channel that ended meanwhile
        elif kind == DATA:
            if channel.queued + len(payload) > WINDOW:
                await self._end(channel)  # past its window: the box is wrong
                return
            channel.queued += len(payload)
            channel.to_proxy.put_nowait(payload)
        elif kind == EOF:
            channel.to_proxy.put_nowait(None)
        elif kind == CLOSE:
            await self._drop(channel)
        elif kind == CREDIT:
            channel.window = min(WINDOW, channel.window + length)
            channel.credited.set()

    async def _run(self, channel: _Channel) -> None:
        """Connect the channel to the target and move its bytes both ways."""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                reader, writer = await asyncio.open_unix_connection(str(self.target))
        except (OSError, TimeoutError):
            await self._end(channel)
            return
        upstream = asyncio.create_task(self._to_proxy(channel, writer))
        try:
            await self._from_proxy(channel, reader)
            await upstream
        except (OSError, ConnectionError):
            await self._end(channel)
        finally:
            upstream.cancel()
            writer.close()

    async def _to_proxy(self, channel: _Channel, writer: asyncio.StreamWriter) -> None:
        while (data := await channel.to_proxy.get()) is not None:
            writer.write(data)
            await writer.drain()
            channel.queued -= len(data)
            await self._send(frame(CREDIT, channel.number, length=len(data)))
        if writer.can_write_eof():
            writer.write_eof()

    async def _from_proxy(self, channel: _Channel, reader: asyncio.StreamReader) -> None:
        while True:
            await channel.credited.wait()
            data = await reader.read(min(channel.window, MAX_DATA))
            if not data:
                await self._send(frame(EOF, channel.number))
                return
            channel.window -= len(data)
            if channel.window <= 0:
                channel.credited.clear()
            await self._send(frame(DATA, channel.number, data))

    async def _end(self, channel: _Channel) -> None:
        """Close a channel from the host's side, telling the box."""
        if self._channels.get(channel.number) is channel:
            await self._drop(channel)
            with contextlib.suppress(OSError, ConnectionError):
                await self._send(frame(CLOSE, channel.number))

    async def _drop(self, channel: _Channel) -> None:
        if self._channels.get(channel.number) is channel:
            del self._channels[channel.number]
        current = asyncio.current_task()
        for task in channel.tasks:
            if task is not current:
                task.cancel()
