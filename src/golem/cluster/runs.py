"""Runs on a Ray cluster, the node's side: a claimed run's runner executes on the node that
holds its box.

The control plane claims runs from the store (PostgreSQL: every node reaches it) as a
single server does, and hands each to the cluster (``ClusterEngine.carry_run``): a slot is
reserved like a session's (Ray's queue holds the run while the cluster is full), and the
slot's node's box host runs golem's ``Runner`` there (``NodeRuns``) with the node's engine,
the run's tenant's store and forge tokens, and ``Checkpoints``: after each node its
checkout is kept in the store. The run's owner stays the control plane's process (so a
restarted control plane recovers it as its own), and the node ends the run's runner when
that control plane dies.

A node that dies under a run: its box host's death reaches the control plane as the call's
error (``NodeLost``), the run goes back to the queue, and the next node resumes it from its
last checkpoint (one commit, one pull request).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ray.exceptions import RayActorError

from golem.blueprint import Runner, RunState
from golem.blueprint.checkpoint import Checkpoints
from golem.core.config import GolemConfig
from golem.forge import ForgeCredentials
from golem.store import SqlStore, database_url

if TYPE_CHECKING:
    from golem.service import ServerState

__all__ = ["STOP_WAIT", "NodeRuns", "RunOrder"]

log = logging.getLogger("golem.cluster")

STOP_WAIT = 60.0
"""Seconds a node's runner has to end its box once its run is taken back."""


@dataclass(frozen=True)
class RunOrder:
    """What a node needs to run a claimed run: which one, whose (its tenant's store and
    forge tokens), the control plane's configuration (its store, models, forges), whether
    it resumes, the control plane process answering for it, and the claim it took the run
    under (the node's runner writes nothing once the run was claimed again)."""

    run_id: str
    tenant: str
    config: GolemConfig
    credentials: ForgeCredentials
    resumed: bool
    owner_pid: int
    owner_start: int | None
    claim: int


class NodeRuns:
    """The runs whose runner is on this node (used on the box host's server loop). Each
    run comes with its control plane's configuration: several control planes may share a
    cluster, each with its own store and settings; the node's own part of a configuration
    (its state directory: checkouts, dependency caches) is ``local``'s."""

    def __init__(self, local: Callable[[GolemConfig], GolemConfig], state: ServerState) -> None:
        self._local = local
        self._state = state
        self._stores: dict[str, SqlStore] = {}  # by database URL: one per control plane's
        self._opening = asyncio.Lock()
        self.running: dict[str, asyncio.Task[RunState]] = {}
        self._owners: dict[str, asyncio.Task[None]] = {}  # control plane -> its one watch
        self._runs_of: dict[str, set[str]] = {}  # control plane -> its runs here

    async def _store_of(self, config: GolemConfig) -> SqlStore:
        url = database_url(config)
        async with self._opening:
            if url not in self._stores:
                self._stores[url] = await SqlStore.connect(url, tenant=None)
            return self._stores[url]

    async def carry(self, order: RunOrder, owner_id: str, owner: Any) -> str:
        """Run ``order``'s run here to its end (or until its control plane's ``owner``
        actor, known as ``owner_id``, dies, or the call is cancelled); its status."""
        store = (await self._store_of(order.config)).for_tenant(order.tenant)
        runner = Runner(
            self._local(order.config),
            engine=self._state.engine,
            store=store,
            credentials=order.credentials,
            checkpoints=Checkpoints(),
            owner=(order.owner_pid, order.owner_start),
            claim=order.claim,
        )
        task = asyncio.ensure_future(runner.run(order.run_id, resumed=order.resumed))
        self.running[order.run_id] = task
        self._runs_of.setdefault(owner_id, set()).add(order.run_id)
        if owner_id not in self._owners:  # one call per control plane, not one per run
            self._owners[owner_id] = asyncio.ensure_future(self._follow(owner_id, owner))
        try:
            return (await task).status
        finally:
            self._runs_of.get(owner_id, set()).discard(order.run_id)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(task), STOP_WAIT)
            self.running.pop(order.run_id, None)

    async def stop(self, run_id: str) -> None:
        """Stop the run's runner here (its box removed first); the run stays running in
        the store, for its control plane to requeue or recover."""
        task = self.running.get(run_id)
        if task is not None:
            task.cancel()
            await asyncio.wait([task], timeout=STOP_WAIT)

    async def _follow(self, owner_id: str, owner: Any) -> None:
        """When the control plane's ``owner`` actor dies, its runs here stop."""
        with contextlib.suppress(RayActorError):
            await owner.hold.remote()
        self._owners.pop(owner_id, None)
        runs = self._runs_of.pop(owner_id, set())
        if runs:
            log.warning("control plane %s is gone: its runs here stop: %s", owner_id, runs)
        for run_id in runs:
            if (task := self.running.get(run_id)) is not None:
                task.cancel()

    async def close(self) -> None:
        """Stop the runners here (their runs stay running, for their control plane to
        requeue) and close the store."""
        for watch in self._owners.values():
            watch.cancel()
        for task in list(self.running.values()):
            task.cancel()
        if self.running:
            await asyncio.wait(list(self.running.values()), timeout=STOP_WAIT)
        for store in self._stores.values():
            await store.close()
