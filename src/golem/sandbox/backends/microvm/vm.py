"""A running microVM box: its QEMU process, its serial console and its ports' hosts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Sequence
from pathlib import Path

from golem.sandbox.backends.microvm.egress import PortMux

__all__ = ["Console", "MicroVMBox"]

CONSOLE_TAIL = 4000
OOM_LINE = re.compile(rb"^\[\s*\d+\.\d+\] (?:Memory cgroup )?[Oo]ut of memory: Killed process \d+ ")


class Console:
    """The guest's serial console: its kernel's log, kept as a short tail; OOM kills are
    counted from the lines the guest kernel writes (no box process can write there)."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.tail = bytearray()
        self.oom_kills = 0
        self._line = bytearray()
        self._task = asyncio.create_task(self._read(stream))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.tail += chunk
            del self.tail[:-CONSOLE_TAIL]
            for piece in chunk.splitlines(keepends=True):
                self._line += piece[:512]
                if piece.endswith((b"\n", b"\r")):
                    if OOM_LINE.match(bytes(self._line).lstrip(b"\r\n")):
                        self.oom_kills += 1
                    self._line.clear()
                del self._line[512:]

    def text(self) -> str:
        """The last lines the guest wrote, with every control character but the line
        break shown as "?": a box names its processes, and the kernel logs those names."""
        text = self.tail.decode(errors="replace").replace("\r", "")
        return "".join(c if c == "\n" or c.isprintable() else "?" for c in text).strip()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class MicroVMBox:
    """A running microVM box."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        accel: str,
        console: Console,
        muxes: Sequence[PortMux] = (),
        pidfile: Path | None = None,
    ) -> None:
        self.process = process
        self.reader, self.writer = streams
        self.accel = accel
        """"kvm" (hardware virtualisation) or "tcg" (emulation)."""
        self.console = console
        self._muxes = list(muxes)
        self._pidfile = pidfile
        self._stopped = False

    def describe_loss(self) -> str:
        """How the VM ended, and the tail of its console."""
        code = self.process.returncode
        reason = "the microVM stopped" if code is None else f"QEMU exited with status {code}"
        text = self.console.text()
        return f"{reason}: {text}" if text else reason

    def oom_kills(self) -> int:
        """Processes the guest kernel killed for memory so far."""
        return self.console.oom_kills

    def peak_memory(self) -> int:
        """Unknown from the host (the guest's memory is the VM's size)."""
        return 0

    async def stop(self) -> None:
        """Kill QEMU (the guest and everything in it goes with it)."""
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(Exception):
            self.writer.close()
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        for mux in self._muxes:
            await mux.close()
        await self.console.close()
        if self._pidfile is not None:
            with contextlib.suppress(FileNotFoundError):
                self._pidfile.unlink()
