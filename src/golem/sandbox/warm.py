"""Warm boxes from snapshots: a session naming a snapshot takes a box that has it unpacked
already, and the next such box is started in the background.

A box from a snapshot otherwise costs a copy of the snapshot into its tmpfs at start (about
a millisecond per entry); a warm one costs what a pooled empty box does. A warm box is
filled from the pool's empty boxes of its shape, or started, and kept
in the engine's ``WarmPool`` per tenant, shape and snapshot digest, so a tenant's warm box
never serves another tenant (even one whose snapshot has the same content), a session of
another shape, or a snapshot refreshed since (a new digest). A snapshot taken again under
its name drains the boxes of the old content and fills boxes of the new; one pruned is
drained when the engine next reaps (a session never gets it: its name no longer resolves
to that digest). Bounded by ``engine.pool.snapshot_boxes`` per key and
``max_snapshot_boxes`` in all; ``max_idle`` and ``max_age`` stop them as any pooled box.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from golem.core.errors import GolemError
from golem.core.spec import BoxSpec
from golem.sandbox.contracts import Box
from golem.sandbox.pool import LiveBox, WarmGroup, WarmKey, WarmPool, shape_of
from golem.sandbox.snapshots import SnapshotInfo, SnapshotStore

__all__ = ["WarmSnapshots", "warm_key"]


def warm_key(spec: BoxSpec, info: SnapshotInfo) -> WarmKey | None:
    """The key of warm boxes from ``info`` for sessions of ``spec``: the snapshot's own
    tenant (whom ``spec`` found it as), the shape and the content; None when such a box is
    never shared (``shape_of``)."""
    shape = shape_of(spec)
    return None if shape is None else (info.tenant, shape, info.digest)


class WarmSnapshots:
    """Fills, hands out and drains an engine's warm boxes from snapshots."""

    def __init__(
        self,
        pool: WarmPool,
        snapshots: SnapshotStore,
        *,
        start: Callable[[BoxSpec], Awaitable[LiveBox]],
        stop: Callable[[LiveBox], Awaitable[None]],
        as_box: Callable[[LiveBox, BoxSpec], Box],
    ) -> None:
        self.pool = pool
        self.snapshots = snapshots
        self._start = start
        self._stop = stop
        self._as_box = as_box
        self._fills: set[asyncio.Task[None]] = set()

    async def take(self, spec: BoxSpec, info: SnapshotInfo) -> LiveBox | None:
        """A live warm box of ``spec``'s tenant and shape with ``info`` unpacked, or None."""
        key = warm_key(spec, info)
        while key is not None and (live := self.pool.take_warm(key)) is not None:
            if live.client.lost is None:
                return live
            await self._stop_quietly(live)
        return None

    def refill(self, spec: BoxSpec, info: SnapshotInfo) -> None:
        """Start, in the background, the warm boxes ``info``'s key lacks."""
        for _ in range(self.pool.config.snapshot_boxes):
            if not self._fill_one(spec, info):
                return

    async def fill(self, spec: BoxSpec, info: SnapshotInfo) -> None:
        """Start the warm boxes ``info``'s key lacks, and wait for them."""
        self.refill(spec, info)
        await self.settled()

    async def settled(self) -> None:
        """Wait for the boxes being filled (each kept warm, or stopped when it failed)."""
        while self._fills:
            await asyncio.gather(*self._fills, return_exceptions=True)

    def _fill_one(self, spec: BoxSpec, info: SnapshotInfo) -> bool:
        key = warm_key(spec, info)
        plain = spec.model_copy(update={"labels": {}, "setup": None, "env": {}, "secrets": {}})
        group = None if key is None else self.pool.reserve_warm(key, plain)
        if key is None or group is None:
            return False
        task = asyncio.create_task(self._filled(key, group, plain, info))
        self._fills.add(task)
        task.add_done_callback(self._fills.discard)
        return True

    async def _filled(
        self, key: WarmKey, group: WarmGroup, spec: BoxSpec, info: SnapshotInfo
    ) -> None:
        live: LiveBox | None = None
        settled = kept = False
        try:
            live = await self._start(spec)
            await self.snapshots.restore(self._as_box(live, spec), info)
            settled = True
            kept = self.pool.settle_warm(key, group, live)
        except GolemError:
            pass  # a warm box only saves time: the next session copies the snapshot itself
        finally:
            if not settled:
                self.pool.settle_warm(key, group, None)
            if live is not None and not kept:
                await self._stop_quietly(live)

    async def refreshed(self, old: SnapshotInfo | None, new: SnapshotInfo) -> None:
        """A snapshot was taken under a name that held ``old``: drain the warm boxes of
        the content no name of its tenant holds any more, and fill boxes of ``new`` for
        the shapes they were kept for."""
        if old is None or old.digest == new.digest:
            return
        for spec in await self.drain_stale(tenant=new.tenant, digest=old.digest):
            self.refill(spec, new)

    async def drain_stale(
        self, *, tenant: str | None = None, digest: str | None = None
    ) -> list[BoxSpec]:
        """Stop the warm boxes of snapshot contents their tenant no longer names (taken
        again or pruned), of ``tenant`` and ``digest`` only when given; returns the specs
        they were kept for."""
        names: dict[str, set[str]] = {}
        for info in self.snapshots.all():
            names.setdefault(info.tenant, set()).add(info.digest)
        drained: list[BoxSpec] = []
        for key in self.pool.warm_keys():
            owner, _, content = key
            asked = tenant in (None, owner) and digest in (None, content)
            if asked and content not in names.get(owner, set()):
                spec = self.pool.warm_spec(key)
                for live in self.pool.drain_warm(key):
                    await self._stop_quietly(live)
                if spec is not None:
                    drained.append(spec)
        return drained

    async def close(self) -> None:
        """Let the fills under way end (the engine then stops their boxes with the pool's):
        one cancelled while its backend starts a box could leave that box running."""
        await self.settled()

    async def _stop_quietly(self, live: LiveBox) -> None:
        with contextlib.suppress(GolemError):
            await self._stop(live)
