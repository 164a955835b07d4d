"""Warm pool: boxes handed out without a cold start, kept per box shape.

A box's shape is what fixes it at start (image, limits, user, network, its isolation tier
and so the backend that started it); what a session brings on top (env, secrets, setup,
timeouts) is applied when the box is handed out. A released box is wiped (every process
killed, /workspace, /tmp and /dev/shm emptied, System V IPC removed, environment reset) and
checked before anyone gets it again; a box that fails either is stopped, never handed out.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from golem.core.config import PoolConfig
from golem.core.errors import GolemError
from golem.core.spec import BoxSpec
from golem.sandbox.contracts import StartedBox
from golem.sandbox.network import BoxNetwork
from golem.sandbox.records import BoxRecord
from golem.sandbox.supervisor import SupervisorClient
from golem.sandbox.supervisor.messages import HelloRequest, Reset

__all__ = ["LiveBox", "WarmPool", "shape_of", "wipe"]

SHAPE_FIELDS = frozenset(
    {
        "image",
        "cpus",
        "memory",
        "pids",
        "workspace_size",
        "tmp_size",
        "read_only_root",
        "user",
        "network",
        "tier",
    }
)
WIPED_PATHS = ["/workspace", "/tmp", "/dev/shm"]
WIPE_TIMEOUT = 30.0


@dataclass
class LiveBox:
    """A running box as the engine holds it, in a session or in the pool."""

    record: BoxRecord
    started: StartedBox
    client: SupervisorClient
    shape: str | None
    network: BoxNetwork | None = None  # filtered boxes: their proxy
    pooled_at: float = 0.0  # when it last went into the pool


def shape_of(spec: BoxSpec) -> str | None:
    """The pool key of a spec; None for a box that must never be shared (a host workspace;
    a container engine, whose containers and images a wipe would not clear)."""
    if spec.workspace is not None or spec.containers:
        return None
    return spec.model_dump_json(include=set(SHAPE_FIELDS))


async def wipe(box: LiveBox) -> bool:
    """Reset a box for its next session; False when it did not come back healthy."""
    try:
        async with asyncio.timeout(WIPE_TIMEOUT):  # not wait_for, which can lose a cancel
            await box.client.request(Reset(paths=WIPED_PATHS))
        async with asyncio.timeout(WIPE_TIMEOUT):
            await box.client.request(HelloRequest())
    except (GolemError, TimeoutError):
        return False
    return box.client.lost is None


class WarmPool:
    """Ready boxes (``clean``) and released, not yet wiped ones (``dirty``) per shape."""

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self._clean: dict[str, list[LiveBox]] = {}
        self._dirty: dict[str, list[LiveBox]] = {}

    @property
    def enabled(self) -> bool:
        """Whether boxes are pooled at all."""
        return self.config.clean > 0

    def ready(self, shape: str) -> int:
        """Clean boxes of a shape."""
        return len(self._clean.get(shape, []))

    def take(self, shape: str) -> tuple[LiveBox, bool] | None:
        """A pooled box of this shape and whether it must be wiped first, or None."""
        if clean := self._clean.get(shape):
            return clean.pop(), False
        if dirty := self._dirty.get(shape):
            return dirty.pop(), True
        return None

    def wants(self, shape: str) -> bool:
        """Whether a released box of this shape would be kept."""
        if self.config.strategy == "secure":
            return len(self._dirty.get(shape, [])) < self.config.dirty
        return self.ready(shape) < self.config.clean

    def put_clean(self, box: LiveBox) -> None:
        """Keep a wiped or fresh box, ready to hand out."""
        assert box.shape is not None
        box.pooled_at = time.time()
        self._clean.setdefault(box.shape, []).append(box)

    def put_dirty(self, box: LiveBox) -> None:
        """Keep a released box, to be wiped when handed out (secure strategy)."""
        assert box.shape is not None
        box.pooled_at = time.time()
        self._dirty.setdefault(box.shape, []).append(box)

    def expired(self, now: float) -> list[LiveBox]:
        """Take out the boxes idle longer than ``max_idle`` or older than ``max_age``."""
        gone: list[LiveBox] = []
        for groups in (self._clean, self._dirty):
            for shape, boxes in groups.items():
                keep: list[LiveBox] = []
                for box in boxes:
                    (gone if self._too_old(box, now) else keep).append(box)
                groups[shape] = keep
        return gone

    def _too_old(self, box: LiveBox, now: float) -> bool:
        idle, age = self.config.max_idle, self.config.max_age
        return bool(
            (idle is not None and now - box.pooled_at > idle)
            or (age is not None and now - box.record.created > age)
        )

    def drain(self) -> list[LiveBox]:
        """Take every pooled box out (to stop them)."""
        boxes = [b for group in (*self._clean.values(), *self._dirty.values()) for b in group]
        self._clean.clear()
        self._dirty.clear()
        return boxes

    def ids(self) -> set[str]:
        """Ids of the pooled boxes."""
        groups = (*self._clean.values(), *self._dirty.values())
        return {box.record.id for group in groups for box in group}
