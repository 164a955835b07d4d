"""The contract between the engine and its backends (lifecycle only; execution is shared).

A backend starts a box from a spec and hands back a byte pipe to the box's supervisor. It
never runs commands itself: exec, streaming, files and limits are the supervisor's job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from golem.core.spec import BoxSpec
from golem.sandbox.records import BoxRecord

__all__ = ["Backend", "Mount", "StartedBox"]


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
