"""Warm pool: boxes handed out without a cold start, kept per box shape.

A box's shape is what fixes it at start (image, limits, user, network, its isolation tier
and so the backend that started it); what a session brings on top (env, secrets, setup,
timeouts) is applied when the box is handed out. A released box is wiped (every process
killed, /workspace, /tmp and /dev/shm emptied, System V IPC removed, environment reset) and
checked before anyone gets it again; a box that fails either is stopped, never handed out.

Beside them, warm boxes from snapshots: boxes started ahead of need with a snapshot already
unpacked into them, kept per tenant, shape and snapshot digest (``WarmKey``), as E2B and
Modal keep sandboxes started from a template: a session naming that snapshot of that tenant
takes one without the copy, and the engine starts the next in the background. A warm box
is never handed to another tenant, nor to a session of another snapshot or shape.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from golem.core.config import PoolConfig
from golem.core.errors import GolemError
from golem.core.spec import BoxSpec
from golem.sandbox.contracts import StartedBox
from golem.sandbox.network import BoxNetwork
from golem.sandbox.records import BoxRecord
from golem.sandbox.supervisor import SupervisorClient
from golem.sandbox.supervisor.messages import HelloRequest, Reset

__all__ = ["LiveBox", "WarmGroup", "WarmKey", "WarmPool", "shape_of", "wipe"]

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


WarmKey = tuple[str, str, str]
"""A warm box's key: its tenant, its shape (``shape_of``) and its snapshot's digest."""


@dataclass
class WarmGroup:
    """The warm boxes of one key, and the spec that starts another (labels dropped)."""

    spec: BoxSpec
    boxes: list[LiveBox] = field(default_factory=list)
    filling: int = 0  # boxes being started and restored for it


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
        self._warm: dict[WarmKey, WarmGroup] = {}

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

    def take_warm(self, key: WarmKey) -> LiveBox | None:
        """A warm box of this tenant, shape and snapshot, or None."""
        group = self._warm.get(key)
        return group.boxes.pop() if group is not None and group.boxes else None

    def reserve_warm(self, key: WarmKey, spec: BoxSpec) -> WarmGroup | None:
        """Count a warm box about to be started for ``key``: its group, to settle with
        ``settle_warm``; None (nothing counted) when the key holds ``snapshot_boxes``
        already or all keys ``max_snapshot_boxes``."""
        if not self.enabled or self.config.snapshot_boxes == 0:
            return None
        group = self._warm.setdefault(key, WarmGroup(spec))
        held = sum(len(g.boxes) + g.filling for g in self._warm.values())
        if (
            len(group.boxes) + group.filling >= self.config.snapshot_boxes
            or held >= self.config.max_snapshot_boxes
        ):
            return None
        group.filling += 1
        return group

    def settle_warm(self, key: WarmKey, group: WarmGroup, box: LiveBox | None) -> bool:
        """Settle a reservation: keep ``box`` (restored from the key's snapshot) warm, or
        with None give the reservation up. False when the box is not kept (its key was
        drained meanwhile): stop it."""
        group.filling -= 1
        if box is None or self._warm.get(key) is not group:
            return False
        box.pooled_at = time.time()
        group.boxes.append(box)
        return True

    def warm_keys(self) -> list[WarmKey]:
        """Keys with warm boxes or boxes being filled."""
        return list(self._warm)

    def warm_spec(self, key: WarmKey) -> BoxSpec | None:
        """The spec warm boxes of ``key`` are started with, if the key is kept."""
        group = self._warm.get(key)
        return group.spec if group is not None else None

    def drain_warm(self, key: WarmKey) -> list[LiveBox]:
        """Forget ``key`` (a snapshot refreshed or pruned): its boxes, to stop; boxes being
        filled for it are stopped as they arrive."""
        group = self._warm.pop(key, None)
        return group.boxes if group is not None else []

    def expired(self, now: float) -> list[LiveBox]:
        """Take out the boxes idle longer than ``max_idle`` or older than ``max_age``."""
        gone: list[LiveBox] = []
        for group in self._warm.values():
            old = [box for box in group.boxes if self._too_old(box, now)]
            group.boxes = [box for box in group.boxes if box not in old]
            gone.extend(old)
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
        boxes.extend(box for group in self._warm.values() for box in group.boxes)
        self._clean.clear()
        self._dirty.clear()
        self._warm.clear()
        return boxes

    def ids(self) -> set[str]:
        """Ids of the pooled boxes."""
        groups = (*self._clean.values(), *self._dirty.values())
        warm = (group.boxes for group in self._warm.values())
        return {box.record.id for group in (*groups, *warm) for box in group}
