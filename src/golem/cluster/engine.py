"""ClusterEngine: golem's ``Engine`` on a Ray cluster.

A session is a LEASE first: a small Ray actor asking for one box slot (``[cluster]
slot_resource``, which each node advertises at ``ray start --resources``). Ray places it on
a node with a free slot, or keeps it pending while the cluster is full (the queue). The
lease says which node it is on; that node's BOX HOST (``golem.cluster.boxhost``, one actor
per node, made the first time a lease lands there) makes the box, and the session is used
through the RemoteEngine of the host's URL, so every call (exec, streams, files, stdin,
pty) goes straight to the node. The lease lives as long as the session; ending the session
kills it, which frees the slot. A lease that dies (its node gone) ends the session with
``NodeLost`` naming the node.

Ray does placement, membership and failure detection; nothing here keeps a node list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ray
from pydantic import ValidationError
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from golem.cluster.boxhost import HOST_CALLS, BoxHost
from golem.cluster.lease import Lease
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError, GolemError, NodeLost, Problem, SessionNotFound
from golem.core.events import EventSink, ExecEvent
from golem.core.spec import BoxSpec
from golem.sandbox import BoxInfo, ExecResult, Request
from golem.service.channel import ProblemFrame
from golem.service.client import RemoteEngine, error_of
from golem.service.remote_box import RemoteBox

__all__ = ["ClusterEngine", "Lease", "NodeEngine", "stop_box_hosts"]

log = logging.getLogger("golem.cluster")

PING_TIMEOUT = 10.0
BOX_HOST_PREFIX = "golem-box-host-"


Handle = Any
"""A Ray actor handle (Ray's own types are partial; golem treats handles as Any)."""
_LeaseActor: Any = ray.remote(Lease)
_BoxHostActor: Any = ray.remote(BoxHost)


def stop_box_hosts(namespace: str) -> list[str]:
    """End every box host of ``namespace`` (their sessions and boxes); their node ids."""
    stopped = []
    for named in ray.util.list_named_actors(all_namespaces=True):
        if named["namespace"] == namespace and named["name"].startswith(BOX_HOST_PREFIX):
            host = ray.get_actor(named["name"], namespace=namespace)
            with contextlib.suppress(RayActorError):
                ray.get(host.stop.remote(), timeout=60)
            ray.kill(host)
            stopped.append(named["name"].removeprefix(BOX_HOST_PREFIX))
    return stopped


def _why(exc: BaseException) -> str:
    """The line of a Ray actor error that says why the actor died."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = [line for line in lines if "died because" in line or "node" in line.lower()]
    return (said or lines or [type(exc).__name__])[-1]


class NodeEngine(RemoteEngine):
    """The sessions API of one node's box host; a host that no longer answers turns the
    errors of its calls into NodeLost."""

    def __init__(self, node_id: str, host: Handle, url: str, key: str, config: GolemConfig) -> None:
        super().__init__(url, key, config=config)
        self.node_id = node_id
        self.host = host
        self.lost: str | None = None

    def error_of(self, problem: ProblemFrame) -> GolemError:
        """As RemoteEngine's, but an unreachable host of a lost node is NodeLost."""
        if problem.status == 503 and self.lost is not None:
            return NodeLost(self.lost)
        return error_of(problem)

    async def check(self) -> None:
        """Raise NodeLost when the box host (so its node) is gone."""
        if self.lost is None:
            try:
                await asyncio.wait_for(self.host.ping.remote(), PING_TIMEOUT)
            except RayActorError as exc:
                self.lost = f"the session's node {self.node_id} is gone: {_why(exc)}"
            except TimeoutError:
                return  # slow, not known dead: the caller's own error stands
            else:
                return
        raise NodeLost(self.lost)

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            return await super().request(method, path, **kwargs)
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise

    async def download(self, path: str, params: dict[str, Any]) -> AsyncIterator[bytes]:
        try:
            async for chunk in super().download(path, params):
                yield chunk
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise

    async def sse(self, path: str, body: Any) -> AsyncIterator[tuple[str, str]]:
        try:
            async for message in super().sse(path, body):
                yield message
        except GolemError as exc:
            if getattr(exc, "http_status", None) == 503:
                await self.check()
            raise

    async def forget(self, box_id: str) -> None:
        """The session is gone with its node: its handles here are closed."""
        for box in self._handles.pop(box_id, []):
            await box.end()


@dataclass
class _Placed:
    """A session: its lease, the node engine that holds it, the task watching the lease."""

    lease: Handle
    node: NodeEngine
    watch: asyncio.Task[None] | None = None


class ClusterEngine:
    """Sessions on the nodes of a Ray cluster (see the module)."""

    def __init__(self, config: GolemConfig) -> None:
        self.config = config
        self._cluster = config.cluster
        self._nodes: dict[str, NodeEngine] = {}
        self._placed: dict[str, _Placed] = {}
        self._ended: dict[str, str] = {}  # session id -> why (its node went)
        self._callbacks: list[Callable[[str, str], None]] = []
        self._hosting = asyncio.Lock()

    async def __aenter__(self) -> ClusterEngine:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    def spec(self, spec: BoxSpec | Mapping[str, Any] | None = None, **overrides: Any) -> BoxSpec:
        """A BoxSpec from the configured defaults, ``spec`` and ``overrides`` (as
        LocalEngine's: the nodes run with this configuration)."""
        if isinstance(spec, BoxSpec) and not overrides:
            return spec
        base = self.config.engine.defaults.model_dump(exclude_unset=False)
        given = (
            spec.model_dump(exclude_unset=True) if isinstance(spec, BoxSpec) else dict(spec or {})
        )
        try:
            return BoxSpec.model_validate({**base, **given, **overrides})
        except ValidationError as exc:
            raise ConfigError(f"invalid box spec: {exc.errors()[0]['msg']}") from exc

    async def start(self, *, prewarm: bool = False, specs: Sequence[BoxSpec] = ()) -> None:
        """Join the Ray cluster (unless this process already has)."""
        if ray.is_initialized():
            return
        address = self._cluster.ray_address
        if address is None:
            raise ConfigError("ClusterEngine needs [cluster] ray_address")
        # On this thread (the server's main one): Ray installs signal handlers, and joining
        # takes a moment once, at startup.
        ray.init(address=address, namespace=self._cluster.namespace, log_to_driver=False)

    async def _node(self, node_id: str) -> NodeEngine:
        """The engine of a node's box host, the host started when there is none yet."""
        async with self._hosting:
            known = self._nodes.get(node_id)
            if known is not None and known.lost is None:
                return known
            host = _BoxHostActor.options(
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
                raise NodeLost(f"node {node_id} cannot host boxes: {_why(exc)}") from exc
            engine = NodeEngine(node_id, host, url, key, self.config)
            self._nodes[node_id] = engine
            return engine

    async def _lease(self) -> tuple[Handle, NodeEngine]:
        """A slot on some node, once Ray has one (or within ``lease_timeout``)."""
        lease = _LeaseActor.options(
            num_cpus=0,
            resources={self._cluster.slot_resource: 1},
            namespace=self._cluster.namespace,
        ).remote()
        try:
            async with asyncio.timeout(self._cluster.lease_timeout):
                node_id: str = await lease.node.remote()
            return lease, await self._node(node_id)
        except TimeoutError:
            ray.kill(lease)
            raise Problem(
                429,
                f"no box slot freed on the cluster within {self._cluster.lease_timeout:g}s "
                "([cluster] lease_timeout); try again later",
                headers={"Retry-After": "10"},
            ) from None
        except BaseException:
            ray.kill(lease)
            raise

    async def create_session(
        self, spec: BoxSpec | Mapping[str, Any] | None = None, *,
        on_event: EventSink[ExecEvent] | None = None,
    ) -> RemoteBox:  # fmt: skip
        """A box on a node Ray chose, for as long as the session lives."""
        full = self.spec(spec)
        lease, node = await self._lease()
        try:
            box = await node.create_session(full, on_event=on_event)
        except BaseException:
            ray.kill(lease)
            raise
        try:
            await node.host.adopt.remote(box.id, lease)  # the node ends it if the lease dies
        except BaseException:
            with contextlib.suppress(GolemError):
                await node.remove_session(box.id)
            ray.kill(lease)
            raise
        placed = _Placed(lease, node)
        self._placed[box.id] = placed
        placed.watch = asyncio.create_task(self._watch(box.id, placed))
        return box

    async def _watch(self, box_id: str, placed: _Placed) -> None:
        """Wait for the lease to die: its node is gone (or it was killed elsewhere)."""
        try:
            await placed.lease.hold.remote()
        except RayActorError as exc:
            why = f"the session's node {placed.node.node_id} is gone: {_why(exc)}"
        else:
            return
        with contextlib.suppress(NodeLost):
            await placed.node.check()
        if self._placed.pop(box_id, None) is None:
            return
        if placed.node.lost is None:  # the lease alone died: the box's node still holds it
            why = f"the session's lease on node {placed.node.node_id} ended"
            with contextlib.suppress(GolemError):
                await placed.node.remove_session(box_id)
        log.warning("session %s ended: %s", box_id, why)
        self._ended[box_id] = why
        await placed.node.forget(box_id)
        for callback in self._callbacks:
            callback(box_id, why)

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
        if placed.watch is not None:
            placed.watch.cancel()
        try:
            if placed.node.lost is None:
                await placed.node.remove_session(box_id)
            else:
                await placed.node.forget(box_id)
        finally:
            ray.kill(placed.lease)

    @contextlib.asynccontextmanager
    async def session(
        self, spec: BoxSpec | Mapping[str, Any] | None = None, *,
        on_event: EventSink[ExecEvent] | None = None,
    ) -> AsyncIterator[RemoteBox]:  # fmt: skip
        """``async with engine.session(spec) as box:`` one box on the cluster."""
        box = await self.create_session(spec, on_event=on_event)
        try:
            yield box
        finally:
            await self.remove_session(box.id)

    def on_session_end(self, callback: Callable[[str, str], None]) -> None:
        """Have ``callback(box_id, why)`` called when a session ends with its node."""
        self._callbacks.append(callback)

    async def execute(
        self, request: Request, spec: BoxSpec | Mapping[str, Any] | None = None
    ) -> ExecResult:
        """One call in a box of its own, on a node with a free slot."""
        lease, node = await self._lease()
        try:
            return await node.execute(request, self.spec(spec))
        finally:
            ray.kill(lease)

    async def stream(
        self, request: Request, spec: BoxSpec | Mapping[str, Any] | None = None
    ) -> AsyncGenerator[ExecEvent, None]:
        """One call in a box of its own: setup events, then the call's, as they come."""
        lease, node = await self._lease()
        try:
            async with contextlib.aclosing(node.stream(request, self.spec(spec))) as events:
                async for event in events:
                    yield event
        finally:
            ray.kill(lease)

    async def boxes(self) -> list[BoxInfo]:
        """This engine's sessions, on whichever nodes they are."""
        found: list[BoxInfo] = []
        for node in {id(p.node): p.node for p in self._placed.values()}.values():
            if node.lost is None:
                found += [b for b in await node.boxes() if b.id in self._placed]
        return found

    async def prune(self) -> list[BoxInfo]:
        """Nothing here: each box host prunes its node when it starts."""
        return []

    async def close(self) -> None:
        """End this engine's sessions and free their slots (the box hosts stay, detached,
        for the next engine: ``stop_box_hosts`` ends them)."""
        for box_id in list(self._placed):
            with contextlib.suppress(GolemError):
                await self.remove_session(box_id)
        for node in self._nodes.values():
            await node.close()
        self._nodes.clear()
