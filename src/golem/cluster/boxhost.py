"""The box host: one Ray actor per node, pinned to it, owning that node's LocalEngine (its
boxes and warm pool) and serving golem's sessions API on the node, so that the control plane
reaches a session there with the RemoteEngine it already has (no new protocol).

It answers only its own key, made when it starts and handed out by the actor: whoever can
call actors of the Ray cluster can run code on its nodes anyway, so the Ray cluster is the
trust boundary, and the key keeps the node's port closed to anyone else on the network."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import ray
import uvicorn
from fastapi import FastAPI
from ray.exceptions import RayActorError

from golem.cluster.placement import BACKEND_LABEL, DEFAULT_BACKEND, TIER_LABEL
from golem.cluster.runs import NodeRuns, RunOrder
from golem.core.config import BackendConfig, GolemConfig, default_state_dir
from golem.core.errors import BackendUnavailable, GolemError
from golem.core.isolation import IsolationTier, TrustPolicy
from golem.service import NODE_PRINCIPAL, ServerState, node_app, ws_max_size

__all__ = ["KEY_ENV", "NODE_LABEL", "BoxHost", "box_host_app", "node_config", "node_name"]

log = logging.getLogger("golem.cluster")

KEY_ENV = "GOLEM_BOX_HOST_KEY"
"""Where the box host's process keeps its key (the node server's admin key)."""
UNLIMITED = 1_000_000
"""A node's session limits: Ray's slots (``[cluster] slot_resource``) are the real one."""
READY_TIMEOUT = 120.0
NODE_LABEL = "golem-node"
T = TypeVar("T")
HOST_CALLS = 1000
"""Calls a box host's actor takes at once (each control plane's ``hold`` waits there)."""


def node_name() -> str:
    """This node's name: its Ray label ``golem-node`` (``ray start --labels``), else its
    host name. It names the node's state directory, so a node that comes back under the
    same name (a new Ray node id) finds, and prunes, what it left."""
    labels: dict[str, object] = dict(ray.get_runtime_context().get_node_labels())
    label = labels.get(NODE_LABEL)
    return str(label) if label else socket.gethostname()


def node_config(base: GolemConfig, name: str, tier: IsolationTier | None = None) -> GolemConfig:
    """The control plane's configuration as a node's box host uses it: its own state
    directory (boxes, records, a SQLite store of its own), its key, no limits of its own,
    no trust rules (the control plane applied them: a box comes with its tier); and the
    backend of the node's isolation ``tier`` as its default (None: the control plane's)."""
    server = base.server
    policies = {
        role: policy.model_copy(
            update={"max_sessions": UNLIMITED, "server_labels": True, "min_tier": None}
        )
        for role, policy in server.policies.items()
    }
    engine = base.engine
    if tier is not None:
        engine = engine.model_copy(update={"backend": engine.tier_backends()[tier]})
    return base.model_copy(
        update={
            "state_dir": Path(base.cluster.node_state_dir or default_state_dir())
            / "cluster"
            / name,
            "database_url": None,
            "engine": engine,
            "server": server.model_copy(
                update={
                    "admin_key_env": KEY_ENV,
                    "max_sessions": UNLIMITED,
                    "policies": policies,
                    "trust": TrustPolicy(),
                }
            ),
        }
    )


def check_labels(settings: GolemConfig, name: str) -> IsolationTier:
    """The isolation tier of this node (its ``golem-tier`` label; none: the default
    backend's); refused when the control plane serves no such tier, or the node's
    ``golem-backend`` label says another backend than the one serving it (whether that
    backend runs here is the engine's own check, when the host starts)."""
    labels: dict[str, object] = dict(ray.get_runtime_context().get_node_labels())
    engine = settings.engine
    tier = str(labels.get(TIER_LABEL, engine.default_tier))
    backends: dict[str, BackendConfig] = {str(t): b for t, b in engine.tier_backends().items()}
    if tier not in backends:
        raise BackendUnavailable(
            f"node {name} is labelled {TIER_LABEL}={tier}, but the control plane has no "
            f"backend for that isolation tier (it serves {', '.join(backends)}): configure "
            f"[engine.tiers.{tier}] there, or fix the node's labels (ray start --labels)"
        )
    claimed = str(labels.get(BACKEND_LABEL, DEFAULT_BACKEND))
    backend = backends[tier].type
    if claimed != backend:
        where = "[engine.backend]" if tier == engine.default_tier else f"[engine.tiers.{tier}]"
        raise BackendUnavailable(
            f"node {name} is labelled {BACKEND_LABEL}={claimed}, but its boxes (tier "
            f"{tier}) would use the {backend} backend ({where} of the control plane): fix "
            "the node's labels (ray start --labels) or the control plane's backend"
        )
    return cast(IsolationTier, tier)


class Owners:
    """The node's sessions by the control plane that opened them (on the server's loop):
    when a control plane's ``Owner`` actor dies (Ray ends it with its driver), the sessions
    it left here end, so a control plane gone for good leaves no box on the nodes."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._sessions: dict[str, set[str]] = {}  # owner id -> its sessions here
        self._gone: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # the loop holds tasks weakly only

    async def adopt(self, box_id: str, owner_id: str, owner: Any) -> None:
        """End session ``box_id`` when ``owner`` dies."""
        boxes = self._sessions.get(owner_id)
        if boxes is None:
            boxes = self._sessions[owner_id] = set()
            self._gone[owner_id] = asyncio.Event()
            task = asyncio.ensure_future(self._follow(owner_id, owner))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        held = {h.box.id for h in self._state.sessions.list(NODE_PRINCIPAL)}
        boxes.intersection_update(held)  # forget the sessions that ended meanwhile
        boxes.add(box_id)

    async def _follow(self, owner_id: str, owner: Any) -> None:
        try:
            await owner.hold.remote()
        except RayActorError:
            pass  # the owner is gone, which is all this waits for
        finally:
            try:  # the set stays until all are closed: ``ended`` waits for them
                for box_id in list(self._sessions.get(owner_id, ())):
                    with contextlib.suppress(GolemError):  # ended already: nothing to do
                        await self._state.sessions.close(NODE_PRINCIPAL, box_id)
            finally:
                self._sessions.pop(owner_id, None)
                self._gone.pop(owner_id).set()

    async def ended(self, box_id: str) -> None:
        """Return once no session ``box_id`` of a control plane is held here for it."""
        for owner_id, boxes in list(self._sessions.items()):
            if box_id in boxes:
                await self._gone[owner_id].wait()


def box_host_app(
    settings: GolemConfig,
    name: str,
    ready: Callable[[ServerState, NodeRuns], None],
    failed: Callable[[BaseException], None],
) -> FastAPI:
    """The service's node server on node ``name``; ``ready`` is called with its state and
    its runs, on its loop, once it serves; ``failed`` with the error that kept it from
    starting (no backend on the node, ...)."""

    @asynccontextmanager
    async def serving(state: ServerState) -> AsyncIterator[None]:
        runs = NodeRuns(lambda control: node_config(control, name), state)
        ready(state, runs)
        try:
            yield
        finally:
            await runs.close()

    return node_app(settings, serving, failed)


class BoxHost:
    """The Ray actor of one node (made by ``golem.cluster.engine``, pinned there)."""

    def __init__(self, config: GolemConfig, node_id: str) -> None:
        self.node_id = node_id
        self._key = "golem-box-host-" + secrets.token_urlsafe(32)
        os.environ[KEY_ENV] = self._key  # this actor's own process
        self.name = node_name()
        settings = node_config(config, self.name, check_labels(config, self.name))
        host: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call,unused-ignore]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, 0))
        self.url = f"http://{host}:{listener.getsockname()[1]}"
        ready = threading.Event()
        failed: list[BaseException] = []

        def refused(error: BaseException) -> None:
            failed.append(error)
            ready.set()

        def serving(state: ServerState, runs: NodeRuns) -> None:
            self._loop = asyncio.get_running_loop()
            self._state = state
            self._owners = Owners(state)
            self._runs = runs
            ready.set()

        self._server = uvicorn.Server(
            uvicorn.Config(
                box_host_app(settings, self.name, serving, refused),
                log_level="warning",
                ws="websockets-sansio",
                ws_max_size=ws_max_size(settings),
                timeout_graceful_shutdown=10,
                timeout_keep_alive=75,
            )
        )
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [listener]}, daemon=True
        )
        self._thread.start()
        waited = 0.0
        while not ready.wait(0.5):  # its lifespan says when it serves; a failed one ends it
            waited += 0.5
            if not self._thread.is_alive() or waited > READY_TIMEOUT:
                raise RuntimeError(f"the box host of node {node_id} did not start; see its log")
        if failed:  # the actor's creation error: the control plane shows it
            raise failed[0]
        log.info("box host of node %s (%s) serves %s", self.name, node_id, self.url)

    # An async actor: its methods run on the actor's loop; the server's are on its own.

    async def address(self) -> tuple[str, str]:
        """The node's sessions API and its key."""
        return self.url, self._key

    async def adopt(self, box_id: str, owner_id: str, owner: Any) -> None:
        """Tie session ``box_id`` to its control plane's ``owner``: when it dies, the
        session ends."""
        adopting = self._owners.adopt(box_id, owner_id, owner)
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(adopting, self._loop))

    async def ended(self, box_id: str) -> None:
        """Return once session ``box_id`` is no longer held for a control plane."""
        waiting = self._owners.ended(box_id)
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(waiting, self._loop))

    async def held(self) -> dict[str, list[str]]:
        """What this node holds: ``sessions`` (ids of its live sessions) and ``runs`` (ids
        of the runs whose runner is here)."""

        async def listing() -> dict[str, list[str]]:
            sessions = sorted(h.box.id for h in self._state.sessions.list(NODE_PRINCIPAL))
            return {"sessions": sessions, "runs": sorted(self._runs.running)}

        return await self._on_server(listing())

    async def carry_run(self, order: RunOrder, owner_id: str, owner: Any) -> str:
        """Run a claimed run on this node to its end (see ``golem.cluster.runs``); its
        status. Cancelled (its control plane stops), the run's runner ends its box first."""
        log.info("node %s runs %s for control plane %s", self.name, order.run_id, owner_id)
        carrying = asyncio.run_coroutine_threadsafe(
            self._runs.carry(order, owner_id, owner), self._loop
        )
        try:
            return await asyncio.shield(asyncio.wrap_future(carrying))
        except asyncio.CancelledError:
            await self._on_server(self._runs.stop(order.run_id))
            raise

    async def _on_server(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` on the server's loop (where the node's engine lives)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def ping(self) -> str:
        """This host's node id (an answer: the node is alive)."""
        return self.node_id

    async def hold(self) -> None:
        """Never returns: a control plane learns of the node's death by its error."""
        await asyncio.Event().wait()

    async def stop(self) -> None:
        """End the node's sessions and its server (ray.kill afterwards)."""
        self._server.should_exit = True
        await asyncio.to_thread(self._thread.join, 60)
