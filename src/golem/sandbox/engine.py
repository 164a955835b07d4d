"""Engine: starts boxes through the backend of the isolation tier each needs, keeps sessions,
runs one-off calls, prunes orphans."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from golem.core.config import DockerBackendConfig, GolemConfig, load_config
from golem.core.errors import GolemError, SessionNotFound, SetupFailed
from golem.core.events import EventSink, ExecEvent
from golem.core.ids import new_id
from golem.core.isolation import Isolation, IsolationTier, tier_of
from golem.core.spec import BoxSpec
from golem.sandbox.backends import make_backend, make_backend_for
from golem.sandbox.box import LocalBox, as_request
from golem.sandbox.containers import check_containers, engine_env
from golem.sandbox.contracts import Backend, Mount, StartedBox
from golem.sandbox.ends import SessionEnds
from golem.sandbox.kept_trees import TREE_BACKENDS, copies_natively, copy_in, tree_mount
from golem.sandbox.models import BoxInfo, ExecRequest, ExecResult
from golem.sandbox.network import BOX_SOCKET, EgressService
from golem.sandbox.pool import LiveBox, WarmPool, shape_of, wipe
from golem.sandbox.records import BoxRecord, BoxRegistry
from golem.sandbox.sessions import BoxSessions
from golem.sandbox.setup import run_setup
from golem.sandbox.snapshots import SnapshotInfo, SnapshotStore
from golem.sandbox.specs import configured_spec
from golem.sandbox.supervisor import SessionClient, SupervisorClient
from golem.sandbox.supervisor.messages import Bridge, Configure
from golem.sandbox.warm import WarmSnapshots

__all__ = ["LocalEngine"]

START_TIMEOUT = 30.0
REAP_INTERVAL = 30.0
BOX_HOME = "/tmp/home"


class LocalEngine(BoxSessions[LocalBox]):
    """This machine's sandbox engine (an ``Engine``). Use as
    ``async with LocalEngine(config) as engine:``.

    ``session`` keeps one box for many calls; ``execute`` and ``stream`` run one call in
    a box of its own (a new one, or a pooled one wiped since its last session). Boxes left
    by a crashed process are found and removed by ``prune``.

    A box is started by the backend of the isolation tier its spec names (``spec.tier``;
    None: ``engine.backend``'s), or of the next stronger tier this host has; ``backend``
    is the default tier's (``engine.backend``), the others are made when first needed.
    """

    def __init__(self, config: GolemConfig | None = None, *, backend: Backend | None = None):
        self.config = config or load_config()
        self.backend = backend or make_backend(self.config.engine.backend)
        self._backends: dict[IsolationTier, Backend] = {
            self.config.engine.default_tier: self.backend
        }
        self.registry = BoxRegistry(self.config.state_dir)
        self.pool = WarmPool(self.config.engine.pool)
        self.snapshots = SnapshotStore(self.config.state_dir)
        self.warm = WarmSnapshots(
            self.pool, self.snapshots, start=self._acquire, stop=self._stop, as_box=self._as_box
        )
        self._boxes: dict[str, tuple[LocalBox, LiveBox]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._checked: set[IsolationTier] = set()
        self._checking = asyncio.Lock()
        self._egress: EgressService | None = None
        self._ends = SessionEnds()

    def spec(self, spec: BoxSpec | Mapping[str, Any] | None = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec from the configured defaults, with ``spec`` and ``overrides`` applied."""
        return configured_spec(self.config, spec, overrides)

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Get ready for a long life: reap old and idle boxes every so often, and with
        ``prewarm`` fill the pool for ``specs`` (default: the configured defaults), each
        with the backend of its tier; a spec naming a snapshot gets warm boxes with it
        unpacked (``engine.pool.snapshot_boxes``). Only a started engine refills warm
        boxes after a session from a snapshot (one engine per `golem run` never would
        use them)."""
        await self._check_backend(self.config.engine.default_tier)
        if self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever())
        if not (prewarm and self.pool.enabled):
            return
        for asked in specs or [self.spec()]:
            spec = self._tiered(asked)
            shape = shape_of(spec)
            if shape is None:
                continue
            await self._check_backend(self._tier(spec))
            if spec.snapshot is not None:
                backend = self.backend_for(self._tier(spec)).name
                await self.warm.fill(spec, self.snapshots.resolve(spec, backend=backend))
                continue
            missing = self.pool.config.clean - self.pool.ready(shape)
            results = await asyncio.gather(
                *(self._start_box(spec) for _ in range(missing)), return_exceptions=True
            )
            for result in results:
                if isinstance(result, LiveBox):
                    self.pool.put_clean(result)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def _check_backend(self, tier: IsolationTier) -> None:
        """Once per engine and tier: a clear error when the tier's backend cannot run here
        (later failures surface as box errors). A check is blocking work (a docker ping,
        gVisor's platform tried in a sandbox): it runs in a worker thread, one at a time."""
        if tier in self._checked:
            return
        async with self._checking:
            if tier not in self._checked:
                await asyncio.to_thread(self.backend_for(tier).check)
                self._checked.add(tier)

    def backend_for(self, tier: IsolationTier) -> Backend:
        """The backend serving ``tier`` here (``engine.tiers``, or ``engine.backend`` for its
        own), made when first needed; KeyError for a tier this host does not serve."""
        backend = self._backends.get(tier)
        if backend is None:
            backend = make_backend(self.config.engine.tier_backends()[tier])
            self._backends[tier] = backend
        return backend

    def _tiered(self, spec: BoxSpec) -> BoxSpec:
        """``spec`` naming the tier that serves it here (NoTierBackend when none does)."""
        tier = self.config.engine.serving(spec.tier)
        return spec if spec.tier == tier else spec.model_copy(update={"tier": tier})

    @staticmethod
    def _tier(spec: BoxSpec) -> IsolationTier:
        assert spec.tier is not None, "a spec the engine has not tiered"
        return spec.tier

    def _isolation(self, tier: IsolationTier, started: StartedBox) -> Isolation:
        """What a box the ``tier``'s backend started got: the tier its backend really
        isolates at, which backend, a docker engine's OCI runtime, and what the box says of
        itself: a microVM's accelerator (``accel``), gVisor's ``platform`` and ``flags``."""
        config = self.config.engine.tier_backends().get(tier, self.config.engine.backend)
        accel, platform = getattr(started, "accel", None), getattr(started, "platform", None)
        flags = getattr(started, "flags", None)
        return Isolation(
            tier=tier_of(config),
            backend=self.backend_for(tier).name,
            runtime=config.runtime if isinstance(config, DockerBackendConfig) else None,
            accel=accel if isinstance(accel, str) else None,
            platform=platform if isinstance(platform, str) else None,
            flags=[str(flag) for flag in flags] if isinstance(flags, list) else [],
        )

    async def create_session(
        self,
        spec: BoxSpec | Mapping[str, Any] | None = None,
        *,
        on_event: EventSink[ExecEvent] | None = None,
    ) -> LocalBox:
        """A box that stays until ``remove_session`` (or ``close``): from the pool or new,
        of the isolation tier the spec needs (the spec the box keeps names it)."""
        spec = self._tiered(self.spec(spec))
        check_containers(spec, self.backend_for(self._tier(spec)).name)
        await self._check_backend(self._tier(spec))
        snapshot = live = None
        if spec.snapshot is not None:
            backend = self.backend_for(self._tier(spec)).name
            snapshot = self.snapshots.resolve(spec, backend=backend)
            live = await self.warm.take(spec, snapshot)
        restored = live is not None
        tree = None
        if snapshot is not None and live is None:
            tree = await self._kept_tree(spec, snapshot)
        if live is None:
            live = (
                await self._acquire(spec) if tree is None else await self._from_tree(spec, tree[0])
            )
        elif live.record.labels != spec.labels:
            live.record.labels = spec.labels
            self.registry.save(live.record)
        env = self._box_env(spec)
        if live.network is not None:
            env.update(live.network.configure(spec.egress, credentials=spec.credentials))
        box = LocalBox(
            live.record.id,
            spec,
            SessionClient(live.client, live.record.id),
            live.started,
            network=live.network,
            isolation=live.record.isolation,
        )
        self._boxes[live.record.id] = (box, live)
        try:
            await live.client.request(Configure(env=env))
            if snapshot is not None and tree is not None:
                await copy_in(box, snapshot.roots, tree[1])
            elif snapshot is not None and not restored:
                await self.snapshots.restore(box, snapshot)
            if spec.setup:
                await run_setup(box, spec.setup, on_event)
        except BaseException:
            self._boxes.pop(live.record.id, None)
            await self._stop(live)
            raise
        if snapshot is not None and self._reaper is not None:  # only a long-lived engine's
            self.warm.refill(spec, snapshot)  # a `golem run`'s would fill it to throw it away
        return box

    async def _kept_tree(self, spec: BoxSpec, snapshot: SnapshotInfo) -> tuple[Path, str] | None:
        """The snapshot's kept tree and the box's interpreter that makes its links, for a
        box of ``spec`` that copies it in natively (``golem.sandbox.kept_trees``); None
        where its backend or image cannot."""
        backend = self.backend_for(self._tier(spec))
        copier = getattr(backend, "tree_copier", None)
        if backend.name not in TREE_BACKENDS or copier is None or not copies_natively(spec.image):
            return None
        tree = await self.snapshots.tree(snapshot)
        python = copier(tree)
        return None if python is None else (tree, str(python))

    async def _from_tree(self, spec: BoxSpec, tree: Path) -> LiveBox:
        """A new box with ``tree`` bound read-only, never pooled (its next session would
        see the mount)."""
        live = await self._start_box(spec, [tree_mount(tree)])
        live.shape = None
        return live

    def _as_box(self, live: LiveBox, spec: BoxSpec) -> LocalBox:
        """A handle on a pooled box, to fill it before any session has it."""
        client = SessionClient(live.client, live.record.id)
        return LocalBox(live.record.id, spec, client, live.started, isolation=live.record.isolation)

    async def _acquire(self, spec: BoxSpec) -> LiveBox:
        shape = shape_of(spec) if self.pool.enabled else None
        while shape is not None and (taken := self.pool.take(shape)) is not None:
            live, needs_wipe = taken
            try:
                wiped = not needs_wipe or await wipe(live)
            except BaseException:  # cancelled mid-wipe: the box is out of the pool, stop it
                await self._stop(live)
                raise
            if not wiped:
                await self._stop(live)
                continue
            live.record.labels = spec.labels
            self.registry.save(live.record)
            return live
        return await self._start_box(spec)

    async def _start_box(self, spec: BoxSpec, extra: Sequence[Mount] = ()) -> LiveBox:
        tier = self._tier(spec)
        backend = self.backend_for(tier)
        record = self.registry.new_record(
            new_id("box"), backend.name, image=spec.image, labels=spec.labels
        )
        self.registry.save(record)
        started: StartedBox | None = None
        network = None
        try:
            if spec.network == "filtered":
                network = await self._egress_service().open(record.id)
            mounts = [*(network.mounts() if network is not None else []), *extra]
            started = await backend.start(spec, record, mounts)
            record.isolation = self._isolation(tier, started)
            self.registry.save(record)
            client = SupervisorClient(
                started.reader, started.writer, describe_loss=started.describe_loss
            )
            await client.start(START_TIMEOUT)
            if network is not None:
                port = self.config.engine.network.proxy_port
                await client.request(Bridge(port=port, path=BOX_SOCKET))
            client.on_lost(functools.partial(self._lost, record.id))
        except BaseException:
            if started is not None:
                await started.stop()
            if network is not None:
                await network.close()
            self.registry.remove(record.id)
            raise
        return LiveBox(record, started, client, shape_of(spec), network)

    def _egress_service(self) -> EgressService:
        if self._egress is None:
            self._egress = EgressService(self.config)
        return self._egress

    async def _stop(self, live: LiveBox) -> None:
        await live.client.close()
        await live.started.stop()
        if live.network is not None:
            await live.network.close()
        self.registry.remove(live.record.id)

    @staticmethod
    def _box_env(spec: BoxSpec) -> dict[str, str]:
        return {"HOME": BOX_HOME, **engine_env(spec), **spec.env, **spec.secret_values()}

    def on_session_end(self, callback: Callable[[str, str], None]) -> None:
        """Have ``callback(box_id, why)`` called when a session's box ends by itself (its
        supervisor gone, its box killed or removed from outside, reaped at its age limit),
        not when it is removed through this engine."""
        self._ends.listen(callback)

    def _lost(self, box_id: str, why: str) -> None:
        """A box's connection ended: when it held a session, that session has ended."""
        entry = self._boxes.pop(box_id, None)
        if entry is None:  # removed through the engine, or in the pool (a wipe finds it)
            return
        box, live = entry
        box._client.end()
        self._ends.ended(box_id, why, self._stop_quietly(live))

    async def _stop_quietly(self, live: LiveBox) -> None:
        with contextlib.suppress(GolemError):
            await self._stop(live)

    async def get_session(self, box_id: str) -> LocalBox:
        """A new handle on a live session of this engine (reconnecting to it)."""
        entry = self._boxes.get(box_id)
        if entry is None:
            raise SessionNotFound(
                f"no live session {box_id!r} in this engine; see `golem sessions ls`"
            )
        box, live = entry
        return LocalBox(
            box.id, box.spec, box._client, live.started, isolation=live.record.isolation
        )

    async def snapshot(
        self, box_id: str, name: str, *, max_tenant_bytes: int | None = None
    ) -> SnapshotInfo:
        """Freeze a live session's writable state (/workspace, /tmp, /dev/shm) as the
        snapshot ``name`` of its tenant, checked as a takeback is; boxes whose spec names it
        start from a copy of it."""
        entry = self._boxes.get(box_id)
        if entry is None:
            raise SessionNotFound(
                f"no live session {box_id!r} in this engine; see `golem sessions ls`"
            )
        box, live = entry
        before = self.snapshots.named(box.spec, name)
        info = await self.snapshots.take(
            box, name, backend=live.record.backend, max_tenant_bytes=max_tenant_bytes
        )
        await self.warm.refreshed(before, info)
        return info

    async def fork(self, box_id: str) -> LocalBox:
        """A new session whose box starts from a copy of a live session's files
        (/workspace, /tmp, /dev/shm, checked as a snapshot is; processes are not copied):
        its writes never reach the source, nor the source's later writes it. Of the same
        spec (tenant, env, secrets), setup not run again. Nothing of the copy is kept once
        the fork has it; ``remove_session`` throws the fork away."""
        entry = self._boxes.get(box_id)
        if entry is None:
            raise SessionNotFound(
                f"no live session {box_id!r} in this engine; see `golem sessions ls`"
            )
        box, live = entry
        async with self.snapshots.held(box, backend=live.record.backend) as copy:
            spec = box.spec.model_copy(update={"setup": None, "snapshot": None})
            forked = await self.create_session(spec)
            try:
                await self.snapshots.unpack(forked, copy)
            except BaseException:
                await self.remove_session(forked.id)
                raise
        return forked

    async def remove_session(self, box_id: str) -> None:
        """End a session: its box is wiped back into the pool, or stopped. Also removes an
        orphan recorded by a dead process."""
        entry = self._boxes.pop(box_id, None)
        if entry is not None:
            box, live = entry
            box._client.end()
            await self._release(live)
            return
        if await self._ends.stopped(box_id):  # its box had ended by itself
            return
        record = self.registry.load(box_id)
        if record is None:
            raise SessionNotFound(f"no box {box_id!r}; see `golem sessions ls`")
        if record.owner_alive:
            raise GolemError(
                f"box {box_id} belongs to running process {record.owner_pid}; "
                "stop it there, or end that process and run `golem prune`"
            )
        await self._cleanup(record)

    async def execute(
        self,
        request: ExecRequest | str | Sequence[str],
        spec: BoxSpec | Mapping[str, Any] | None = None,
    ) -> ExecResult:
        """Run one call in a box of its own, released (wiped or stopped) afterwards."""
        async with self.session(spec) as box:
            return await box.execute(request)

    async def stream(
        self,
        request: ExecRequest | str | Sequence[str],
        spec: BoxSpec | Mapping[str, Any] | None = None,
    ) -> AsyncGenerator[ExecEvent, None]:
        """Run one call in a box of its own, yielding setup events, then the call's events."""
        setup_events: list[ExecEvent] = []
        try:
            box = await self.create_session(spec, on_event=setup_events.append)
        except SetupFailed:
            for event in setup_events:
                yield event
            raise
        try:
            for event in setup_events:
                yield event
            async with contextlib.aclosing(box.stream(as_request(request))) as events:
                async for event in events:
                    yield event
        finally:
            await self.remove_session(box.id)

    async def boxes(self) -> list[BoxInfo]:
        """Every box recorded in the state directory, this engine's and others'."""
        return [BoxInfo.of(record) for record in self.registry.all()]

    async def prune(self) -> list[BoxInfo]:
        """Remove every box whose owner process is gone; returns what was removed."""
        removed = []
        for info in await self.boxes():
            if info.owner_alive or info.id in self._boxes or info.id in self.pool.ids():
                continue
            record = self.registry.load(info.id)
            if record is not None:
                await self._cleanup(record)
                removed.append(info)
        return removed

    async def _cleanup(self, record: BoxRecord) -> None:
        ours = [b for b in self._backends.values() if b.name == record.backend]
        if ours:
            await ours[0].cleanup(record)
        else:
            other = make_backend_for(record.backend, self.config)
            try:
                await other.cleanup(record)
            finally:
                other.close()
        EgressService.remove_leftovers(self.config.engine.network, record.id)
        self.registry.remove(record.id)

    async def _release(self, live: LiveBox) -> None:
        """Wipe a box back into the pool when the pool wants one of its shape, else stop it."""
        try:
            await self._pool_or_stop(live)
        except BaseException:  # cancelled or failed mid-wipe: never leave the box running
            await self._stop(live)
            raise

    async def _pool_or_stop(self, live: LiveBox) -> None:
        shape = live.shape
        reusable = live.record.state.get("reusable", True)
        if shape is None or not reusable or not self.pool.enabled or live.client.lost is not None:
            await self._stop(live)
            return
        if live.record.labels:  # a pooled box belongs to no session: drop the last one's
            live.record.labels = {}
            self.registry.save(live.record)
        if self.pool.config.strategy == "secure" and self.pool.wants(shape):
            self.pool.put_dirty(live)
        elif (
            self.pool.config.strategy == "fast"
            and self.pool.wants(shape)
            and await wipe(live)
            and self.pool.wants(shape)  # other releases may have filled it during the wipe
        ):
            self.pool.put_clean(live)
        else:
            await self._stop(live)

    async def reap(self, *, now: float | None = None) -> list[str]:
        """Stop pooled boxes idle past ``pool.max_idle`` and every box older than
        ``pool.max_age`` (their sessions end); returns the ids stopped."""
        now = time.time() if now is None else now
        await self.warm.drain_stale()
        stopped = self.pool.expired(now)
        max_age = self.pool.config.max_age
        if max_age is not None:
            for box_id, (box, live) in list(self._boxes.items()):
                if now - live.record.created > max_age:
                    self._boxes.pop(box_id)
                    box._client.end()
                    stopped.append(live)
                    self._ends.ended(box_id, f"it reached engine.pool.max_age ({max_age:g}s)")
        for live in stopped:
            with contextlib.suppress(GolemError):
                await self._stop(live)
        return [live.record.id for live in stopped]

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            await self.reap()

    async def close(self) -> None:
        """Stop every session and every pooled box of this engine."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        await self.warm.close()
        await self._ends.drain()
        entries = list(self._boxes.values())
        self._boxes.clear()
        for box, live in entries:
            box._client.end()
            with contextlib.suppress(GolemError):
                await self._stop(live)
        for live in self.pool.drain():
            with contextlib.suppress(GolemError):
                await self._stop(live)
        if self._egress is not None:
            self._egress.close()
        for backend in self._backends.values():
            backend.close()
