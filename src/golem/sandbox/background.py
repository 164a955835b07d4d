"""A box's background processes: listed, their output read (masked), signalled, waited
for and forgotten through its supervisor. ``LocalBox.start`` starts them."""

from __future__ import annotations

import asyncio
import signal as signals

from golem.core.errors import InvalidRequest
from golem.core.spec import MAX_TIMEOUT
from golem.sandbox.masking import SecretMasker
from golem.sandbox.models import BackgroundProcess, ProcessOutput
from golem.sandbox.supervisor import SessionClient
from golem.sandbox.supervisor.messages import (
    Forget,
    ProcOutput,
    ProcOutputReply,
    Procs,
    ProcsReply,
    Signal,
    Wait,
    Waited,
    expect,
)

__all__ = ["BoxProcesses"]


class BoxProcesses:
    """The background-process calls of a box whose secrets are ``secrets``."""

    def __init__(self, client: SessionClient, secrets: list[str]) -> None:
        self._process_client = client
        self._process_secrets = secrets

    async def processes(self) -> list[BackgroundProcess]:
        """Background processes of this box, running or finished."""
        reply, _ = await self._process_client.request(Procs())
        return [BackgroundProcess.model_validate(p) for p in expect(reply, ProcsReply).procs]

    async def read_output(self, process_id: str, offset: int = 0) -> ProcessOutput:
        """A background process's output from ``offset`` on (secrets masked); pass the
        returned ``offset`` to the next read. While the process runs, a tail that could
        begin a secret is kept for the next read."""
        masker = SecretMasker(self._process_secrets)
        overlap = max(masker.longest - 1, 0)
        frame = await self._process_client.request(
            ProcOutput(target=process_id, offset=max(offset - overlap, 0))
        )
        reply, data = expect(frame[0], ProcOutputReply), frame[1]
        start = reply.start
        if start > max(offset - overlap, 0):  # the box dropped bytes: one may end a secret
            cut = masker.partial_prefix(data)
            data, start = data[cut:], start + cut
        final = not reply.running
        masked, next_offset = masker.window(data, start, offset, final)
        return ProcessOutput(
            data=masked,
            start=max(start, offset),
            offset=next_offset,
            running=reply.running,
            exit_code=reply.exit.exit_code if reply.exit else None,
            truncated=reply.truncated,
        )

    async def signal(self, process_id: str, signal: int = signals.SIGTERM) -> None:
        """Send a signal to a background process and its process group."""
        reply_id = self._process_client.new_id()
        await self._process_client.request(
            Signal(signal=int(signal), target=process_id, reply=reply_id), call_id=reply_id
        )

    async def wait(self, process_id: str, timeout: float | None = None) -> int | None:
        """Wait for a background process to end; its exit code, or None on timeout."""
        if timeout is not None and not 0 <= timeout <= MAX_TIMEOUT:
            raise InvalidRequest(f"wait's timeout {timeout} is not 0 to {MAX_TIMEOUT:g} seconds")
        call_id, wait = self._process_client.new_id(), Wait(target=process_id, timeout=timeout)
        try:
            reply, _ = await self._process_client.request(wait, call_id=call_id)
        except asyncio.CancelledError:  # its caller left: the box's wait ends too
            await asyncio.shield(self._process_client.cancel(call_id))
            raise
        exit_info = expect(reply, Waited).exit
        return exit_info.exit_code if exit_info else None

    async def forget(self, process_id: str) -> None:
        """Kill a background process if it runs and drop its output."""
        await self._process_client.request(Forget(target=process_id))
