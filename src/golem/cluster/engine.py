"""ClusterEngine: golem's ``Engine`` on a Ray cluster.

A session's slot is a Ray PLACEMENT GROUP of one bundle, one box slot (``[cluster]
slot_resource``, which each node advertises at ``ray start --resources``): Ray reserves it
on a node with a free slot, or keeps it pending while the cluster is full (the queue). The
group's node's BOX HOST (``golem.cluster.boxhost``, one actor per node, made the first
time a slot is reserved there) makes the box, and the session is used through the
RemoteEngine of the host's URL, so every call (exec, streams, files, stdin, pty) goes
straight to the node. Ending the session removes the group, which frees the slot.

Deaths: each node's box host is watched (one call per node that never returns); its error
means the node is gone, and its sessions end with ``NodeLost`` naming it. The box hosts
watch this engine's ``Owner`` actor the same way: Ray ends it with this process's driver,
and the sessions it left on the nodes end.

Ray does placement, membership and failure detection; nothing here keeps a node list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from typing import Any, Self

import ray
from ray.exceptions import RayActorError, TaskCancelledError
from ray.util.placement_group import (
    PlacementGroup,
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from golem.blueprint import RunState, parse_blueprint
from golem.cluster.boxhost import HOST_CALLS
from golem.cluster.lease import Owner
from golem.cluster.nodes import BOX_HOST_PREFIX, BoxHostActor, Handle, NodeEngine, refusal, why
from golem.cluster.placement import selector, slot_ready, unplaceable
from golem.cluster.runs import STOP_WAIT, RunOrder
from golem.cluster.status import cluster_status
from golem.core.config import GolemConfig
from golem.core.errors import (
    ConfigError,
    GolemError,
    NodeLost,
    Problem,
    SessionNotFound,
    SnapshotUnsupported,
)
from golem.core.events import EventSink, ExecEvent
from golem.core.spec import BoxSpec
from golem.forge import ForgeCredentials
from golem.sandbox import (
    BoxInfo,
    BoxSessions,
    ExecResult,
    RemoteBox,
    Request,
    SnapshotInfo,
    configured_spec,
    process_start_time,
)
from golem.service import ClusterStatus

__all__ = ["ClusterEngine"]

log = logging.getLogger("golem.cluster")

_OwnerActor: Any = ray.remote(Owner)
PLACEMENT_CHECK = 0.5
"""Seconds between two reads of a waiting slot's state in Ray."""
SLOT_WAIT_NOTE = 2.0
"""Seconds a run waits for a slot before its followers are told it waits."""
SpecLike = BoxSpec | Mapping[str, Any] | None


@dataclass
class _Placed:
    """A session: its slot (placement group) and the node engine that holds it."""

    slot: PlacementGroup
    node: NodeEngine


class ClusterEngine(BoxSessions[RemoteBox]):
    """Sessions on the nodes of a Ray cluster (see the module)."""

    def __init__(self, config: GolemConfig) -> None:
        self.config = config
        self._cluster = config.cluster
        self._nodes: dict[str, NodeEngine] = {}
        self._watches: dict[str, tuple[Any, asyncio.Task[None]]] = {}  # node id -> ref, task
        self._placed: dict[str, _Placed] = {}
        self._ended: dict[str, str] = {}  # session id -> why (its node went)
        self._callbacks: list[Callable[[str, str], None]] = []
        self._hosting = asyncio.Lock()
        self._unplaced: dict[str, str] = {}  # slot id -> Ray's scheduling state, while waiting
        self._checked = asyncio.Condition()
        self._owner: Handle = None
        self._owner_id = secrets.token_hex(8)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    def spec(self, spec: SpecLike = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec from the configured defaults, ``spec`` and ``overrides`` (as
        LocalEngine's: the nodes run with this configuration)."""
        return configured_spec(self.config, spec, overrides)

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Join the Ray cluster (unless this process already has), and make this engine's
        owner actor."""
        if not ray.is_initialized():
            address = self._cluster.ray_address
            if address is None:
                raise ConfigError("ClusterEngine needs [cluster] ray_address")
            # On this thread (the server's main one): Ray installs signal handlers, and
            # joining takes a moment once, at startup.
            ray.init(address=address, namespace=self._cluster.namespace, log_to_driver=False)
        if self._owner is None:  # on this process's node: left to Ray, it could live on a
            here = ray.get_runtime_context().get_node_id()  # worker and die with that one
            self._owner = _OwnerActor.options(
                num_cpus=0,
                namespace=self._cluster.namespace,
                scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
            ).remote()

    async def _node(self, node_id: str) -> NodeEngine:
        """The engine of a node's box host, the host started when there is none yet, and
        watched from then on."""
        async with self._hosting:
            known = self._nodes.get(node_id)
            if known is not None and known.lost is None:
                return known
            host = BoxHostActor.options(
                name=BOX_HOST_PREFIX + node_id,
                namespace=self._cluster.namespace,
                get_if_exists=True,
                lifetime="detached",  # named alone, it dies with the last handle (an engine's)
                max_concurrency=HOST_CALLS,
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(self.config, node_id)
            try:
                url, key = await host.address.remote()
            except RayActorError as exc:
                raise NodeLost(f"node {node_id} cannot host boxes: {refusal(exc)}") from exc
            engine = NodeEngine(node_id, host, url, key, self.config)
            self._nodes[node_id] = engine
            held = host.hold.remote()
            self._watches[node_id] = (held, asyncio.create_task(self._watch(engine, held)))
            return engine

    async def _watch(self, node: NodeEngine, held: Any) -> None:
        """Wait for a node's box host to die; then its sessions here end."""
        try:
            await held
        except RayActorError as exc:
            lost = f"the session's node {node.node_id} is gone: {why(exc)}"
        else:
            return
        node.lost = lost
        log.warning("%s", lost)
        for box_id, placed in list(self._placed.items()):
            if placed.node is node:
                del self._placed[box_id]
                remove_placement_group(placed.slot)  # Ray would move it to another node
                self._ended[box_id] = lost
                await node.forget(box_id)
                for callback in self._callbacks:
                    callback(box_id, lost)

    async def lease(
        self, spec: BoxSpec | None = None, *, queue: bool = False
    ) -> tuple[PlacementGroup, NodeEngine]:
        """A slot on some node that can run boxes of ``spec`` (a session's, or a run's box
        spec: the node's labels match ``placement.selector``), once Ray has one: within
        ``lease_timeout``, or, with ``queue`` (a claimed run), however long the cluster
        stays full; NoNodeFits at once when no node could hold it now (a claimed run waits
        on: a node may come back, or be added). ``free`` it after."""
        wanted = selector(spec or self.spec(), self.config)
        slot = placement_group([{self._cluster.slot_resource: 1}], bundle_label_selector=[wanted])
        try:
            async with asyncio.timeout(None if queue else self._cluster.lease_timeout):
                await self._placed_slot(slot, wanted, wait_infeasible=queue)
            table = await asyncio.to_thread(placement_group_table, slot)
            return slot, await self._node(table["bundles_to_node_id"][0])
        except TimeoutError:
            remove_placement_group(slot)
            raise Problem(
                429,
                f"no box slot freed on the cluster within {self._cluster.lease_timeout:g}s "
                "([cluster] lease_timeout); try again later",
                headers={"Retry-After": "10"},
            ) from None
        except BaseException:
            remove_placement_group(slot)
            raise

    async def _placed_slot(
        self, slot: PlacementGroup, wanted: dict[str, str], *, wait_infeasible: bool
    ) -> None:
        """Return once Ray has placed ``slot``. While it waits, Ray's scheduling state of
        the slot is read every ``PLACEMENT_CHECK`` seconds (Ray says nothing by itself):
        INFEASIBLE (no node has the labels and slots) raises NoNodeFits unless
        ``wait_infeasible``; any state is what ``waiting`` reports."""
        ready = asyncio.ensure_future(slot_ready(slot))
        key = slot.id.hex()
        try:
            while not (await asyncio.wait([ready], timeout=PLACEMENT_CHECK))[0]:
                table = await asyncio.to_thread(placement_group_table, slot)
                state = str(table.get("stats", {}).get("scheduling_state", ""))
                if state == "INFEASIBLE" and not wait_infeasible:
                    raise unplaceable(wanted, self._cluster.slot_resource)
                async with self._checked:
                    self._unplaced[key] = state
                    self._checked.notify_all()
            ready.result()
        finally:
            ready.cancel()
            self._unplaced.pop(key, None)

    async def waiting(self, at_least: int = 0) -> list[str]:
        """Ray's scheduling state (``NO_RESOURCES``: the nodes that could hold it are
        full) of each slot this engine waits for, once at least ``at_least`` of them have
        been checked (see ``_placed_slot``)."""
        async with self._checked:
            await self._checked.wait_for(lambda: len(self._unplaced) >= at_least)
            return sorted(self._unplaced.values())

    def free(self, slot: PlacementGroup) -> None:
        """Give a leased slot back (a slot Ray still waits to place is withdrawn)."""
        remove_placement_group(slot)

    @property
    def owner(self) -> Handle:
        """This engine's ``Owner`` actor: the nodes end what it left when it dies."""
        return self._owner

    @property
    def owner_id(self) -> str:
        """The id the nodes know this engine's ``Owner`` by."""
        return self._owner_id

    async def carry_run(
        self,
        claimed: RunState,
        tenant: str,
        credentials: ForgeCredentials,
        *,
        note: Callable[[str], Awaitable[None]],
    ) -> None:
        """Run a run this process claimed on a node of the cluster (``golem.cluster.runs``)
        that can hold its boxes (its tier's, with its blueprint's image); NodeLost when its
        node died under it."""
        order = control_plane_order(self.config, claimed, tenant, credentials)
        await carry(self, order, run_spec(self, claimed), note)

    async def create_session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> RemoteBox:
        """A box on a node Ray chose, for as long as the session lives."""
        full = self.spec(spec)
        slot, node = await self.lease(full)
        try:
            box = await node.create_session(full, on_event=on_event)
        except BaseException:
            remove_placement_group(slot)
            raise
        try:  # the node ends it if this engine's process goes
            await node.host.adopt.remote(box.id, self._owner_id, self._owner)
        except BaseException:
            with contextlib.suppress(GolemError):
                await node.remove_session(box.id)
            remove_placement_group(slot)
            raise
        self._placed[box.id] = _Placed(slot, node)
        return box

    def node_engine(self, box_id: str) -> NodeEngine:
        """The engine of the box host holding a session of this engine."""
        placed = self._placed.get(box_id)
        if placed is None:
            raise SessionNotFound(f"no session {box_id!r} on the cluster")
        return placed.node

    def node_of(self, box_id: str) -> str:
        """The Ray node id of the node holding a session of this engine."""
        return self.node_engine(box_id).node_id

    async def get_session(self, box_id: str) -> RemoteBox:
        """A new handle on a live session of this engine."""
        placed = self._placed.get(box_id)
        if placed is None:
            if box_id in self._ended:
                raise NodeLost(self._ended[box_id])
            raise SessionNotFound(f"no session {box_id!r} on the cluster")
        return await placed.node.get_session(box_id)

    async def remove_session(self, box_id: str) -> None:
        """End a session and free its slot."""
        placed = self._placed.pop(box_id, None)
        if placed is None:
            if self._ended.pop(box_id, None) is not None:
                return
            raise SessionNotFound(f"no session {box_id!r} on the cluster")
        try:
            if placed.node.lost is None:
                await placed.node.remove_session(box_id)
            else:
                await placed.node.forget(box_id)
        finally:
            remove_placement_group(placed.slot)

    async def snapshot(
        self, box_id: str, name: str, *, max_tenant_bytes: int | None = None
    ) -> SnapshotInfo:
        """Refused: a snapshot is kept in one host's state directory, which the cluster's
        nodes do not share."""
        raise SnapshotUnsupported(
            "boxes on a Ray cluster have no snapshots yet (each would stay on its node); "
            "take snapshots on a golem serve without [cluster] ray_address"
        )

    async def fork(self, box_id: str) -> RemoteBox:
        """Refused, as snapshots are: a fork is a copy kept on one host."""
        raise SnapshotUnsupported(
            f"session {box_id} is on a Ray cluster, whose boxes have no forks yet; fork "
            "boxes on a golem serve without [cluster] ray_address"
        )

    def on_session_end(self, callback: Callable[[str, str], None]) -> None:
        """Have ``callback(box_id, why)`` called when a session ends with its node."""
        self._callbacks.append(callback)

    async def execute(self, request: Request, spec: SpecLike = None) -> ExecResult:
        """One call in a box of its own, on a node with a free slot."""
        slot, node = await self.lease(self.spec(spec))
        try:
            return await node.execute(request, self.spec(spec))
        finally:
            remove_placement_group(slot)

    async def stream(
        self, request: Request, spec: SpecLike = None
    ) -> AsyncGenerator[ExecEvent, None]:
        """One call in a box of its own: setup events, then the call's, as they come."""
        slot, node = await self.lease(self.spec(spec))
        try:
            async with contextlib.aclosing(node.stream(request, self.spec(spec))) as events:
                async for event in events:
                    yield event
        finally:
            remove_placement_group(slot)

    async def boxes(self) -> list[BoxInfo]:
        """This engine's sessions, on whichever nodes they are."""
        found: list[BoxInfo] = []
        for node in {id(p.node): p.node for p in self._placed.values()}.values():
            if node.lost is None:
                found += [b for b in await node.boxes() if b.id in self._placed]
        return found

    async def cluster_status(self) -> ClusterStatus:
        """The cluster's nodes, their slots and what each holds (``GET /v1/cluster``)."""
        return await cluster_status(self._cluster.slot_resource, self._cluster.namespace)

    async def prune(self) -> list[BoxInfo]:
        """Nothing here: each box host prunes its node when it starts."""
        return []

    async def close(self) -> None:
        """End this engine's sessions and free their slots, stop watching the nodes (the
        box hosts stay, detached, for the next engine: ``stop_box_hosts`` ends them)."""
        for box_id in list(self._placed):
            with contextlib.suppress(GolemError):
                await self.remove_session(box_id)
        for held, watch in self._watches.values():
            watch.cancel()
            with contextlib.suppress(Exception):
                ray.cancel(held)
        self._watches.clear()
        for node in self._nodes.values():
            await node.close()
        self._nodes.clear()
        if self._owner is not None:
            ray.kill(self._owner)
            self._owner = None


async def carry(
    engine: ClusterEngine,
    order: RunOrder,
    spec: BoxSpec,
    note: Callable[[str], Awaitable[None]],
) -> None:
    """Run ``order``'s run to its end on a node of ``engine``'s cluster; NodeLost when
    the node died under it (the run is then the caller's to requeue). A run that waits
    for a slot says so (``note``), once."""
    leasing = asyncio.ensure_future(engine.lease(spec, queue=True))
    try:
        done, _ = await asyncio.wait([leasing], timeout=SLOT_WAIT_NOTE)
        if not done:
            await note(
                f"waits for a free box slot: every {engine.config.cluster.slot_resource} "
                "slot of the cluster is taken; it starts when one frees"
            )
        slot, node = await leasing
    except BaseException:
        leasing.cancel()
        raise
    try:
        ref = node.host.carry_run.remote(order, engine.owner_id, engine.owner)
        try:
            await ref
        except asyncio.CancelledError:  # the control plane stops: the node lets the run go
            ray_cancel(ref)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(_settled(ref)), STOP_WAIT)
            raise
        except RayActorError as exc:
            raise NodeLost(
                f"run {order.run_id}: its node {node.node_id} is gone ({why(exc)}); it is "
                "queued again and resumes from its last checkpoint on another node"
            ) from exc
        except TaskCancelledError as exc:  # not by this process: its node stopped it
            raise NodeLost(
                f"run {order.run_id}: its runner on node {node.node_id} was stopped there "
                "(its box host shuts down); it is queued again and resumes from its last "
                "checkpoint"
            ) from exc
    finally:
        engine.free(slot)


async def _settled(ref: Any) -> None:
    with contextlib.suppress(TaskCancelledError, RayActorError):
        await ref


def ray_cancel(ref: Any) -> None:
    """Cancel an actor call (its coroutine is cancelled on the actor)."""
    with contextlib.suppress(Exception):
        ray.cancel(ref)


def control_plane_order(
    config: GolemConfig, claimed: RunState, tenant: str, credentials: ForgeCredentials
) -> RunOrder:
    """The order of a run this process claimed (it answers for the run)."""
    pid = os.getpid()
    return RunOrder(
        run_id=claimed.id,
        tenant=tenant,
        config=config,
        credentials=credentials,
        resumed=bool(claimed.steps),
        owner_pid=pid,
        owner_start=process_start_time(pid),
        claim=claimed.claim,
    )


def run_spec(engine: ClusterEngine, claimed: RunState) -> BoxSpec:
    """What the run's slot asks of a node: the boxes of its blueprint (its image), in the
    isolation tier the trust policy gave the run."""
    box = parse_blueprint(claimed.blueprint_source, claimed.blueprint).box
    image = box.get("image")
    wanted: dict[str, object] = {"tier": claimed.tier}
    if isinstance(image, str):
        wanted["image"] = image
    return engine.spec(wanted)
