"""The run queue: runs wait in the store; this server's workers claim them one at a time,
fairly across tenants, and run them to their end.

Several servers can share one PostgreSQL store: a claim is atomic, so no run is taken
twice. When a server starts, the runs a dead server of this host left running are
requeued (their boxes pruned first) and resume from their current node, so a crash loses
no run and leaves no box.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

from golem.blueprint import RunRequest, RunState
from golem.blueprint.events import RunEvent, RunFinished
from golem.core.config import GolemConfig
from golem.core.errors import GolemError, QueueFull
from golem.core.network import RemotePolicy
from golem.sandbox import Engine
from golem.sandbox.records import process_alive
from golem.service.forge_access import ForgeAccess
from golem.service.store import SqlStore

__all__ = ["RunHub", "RunQueue"]

log = logging.getLogger("golem.service.queue")
IDLE_POLL = 1.0  # seconds between looks at the store for runs other servers submitted


class RunHub:
    """Wakes whoever follows a run's events when this server's runner emits one. Each
    follower has an event of its own, so none can swallow another's wake-up."""

    def __init__(self) -> None:
        self._followers: dict[str, set[asyncio.Event]] = {}

    @contextlib.contextmanager
    def watch(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever ``run_id`` has something new (clear it before reading)."""
        changed = asyncio.Event()
        self._followers.setdefault(run_id, set()).add(changed)
        try:
            yield changed
        finally:
            followers = self._followers.get(run_id, set())
            followers.discard(changed)
            if not followers:
                self._followers.pop(run_id, None)

    def publish(self, event: RunEvent) -> None:
        """Note that a run has a new event."""
        for changed in self._followers.get(event.run_id, ()):
            changed.set()


class RunQueue:
    """This server's workers over the store's queue."""

    def __init__(
        self, config: GolemConfig, engine: Engine, store: SqlStore, server_id: str
    ) -> None:
        self.config = config
        self.engine = engine
        self.store = store
        self.server_id = server_id
        self.forge_access = ForgeAccess(config, store)
        self.hub = RunHub()
        self._wake = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Requeue what a dead server of this host left running, then start the workers."""
        await self.recover()
        for number in range(self.config.server.max_runs):
            self._workers.append(asyncio.ensure_future(self._work(number)))

    async def recover(self) -> list[str]:
        """Requeue runs whose runner on this host is gone; returns their ids."""
        host = socket.gethostname()
        orphans: list[RunState] = []
        for state in self.store.list_active_runs():
            owner_host = (state.owner_server or "").partition(":")[0]
            if owner_host not in ("", host):
                continue  # another host's server recovers its own runs
            if state.owner_pid is not None and process_alive(state.owner_pid, state.owner_start):
                continue
            orphans.append(state)
        if orphans:
            await self.engine.prune()  # the dead runner's boxes
        for state in orphans:
            self.store.requeue_run(state.id)
        if orphans:
            self.submitted()
        return [state.id for state in orphans]

    def submit(
        self, request: RunRequest, tenant: str, *, remote_policy: RemotePolicy | None = None
    ) -> RunState:
        """Queue a run of ``tenant``'s (its request checked by the runner), if the server
        has room as ``[server] overflow`` says; else QueueFull. ``remote_policy`` bounds
        the git remotes the run may reach (the submitting key's role's ``repos``)."""
        from golem.blueprint import Runner  # noqa: PLC0415 - the runner brings every layer

        self._check_room()
        store = self.store.for_tenant(tenant)
        runner = Runner(self.config, engine=self.engine, store=store, pull_requests=store)
        run = runner.submit(request, remote_policy=remote_policy)
        self.submitted()
        return run

    def _check_room(self) -> None:
        server = self.config.server
        queued = self.store.count_runs("queued")
        if server.overflow == "queue":
            if queued < server.max_queued:
                return
            reason = f"{queued} runs wait already (server.max_queued)"
        else:
            if queued + self.store.count_runs("running", "waiting") < server.max_runs:
                return
            reason = f"all {server.max_runs} runners are busy (server.max_runs)"
        raise QueueFull(reason, retry_after=server.retry_after)

    def submitted(self) -> None:
        """A run was queued: wake an idle worker."""
        self._wake.set()

    async def _work(self, number: int) -> None:
        while True:
            claimed = self.store.claim_next_run(self.server_id)
            if claimed is None:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_POLL)
                continue
            try:
                await self._run(claimed)
            except Exception:  # a run's own failure is in its state; keep the worker alive
                log.exception("worker %d: run %s ended with an error", number, claimed.id)

    async def _run(self, claimed: RunState) -> None:
        from golem.blueprint import Runner  # noqa: PLC0415 - the runner brings every layer

        tenant = self.store.run_tenant(claimed.id) or "default"
        scoped = self.store.for_tenant(tenant)
        forge = claimed.request.forge or self.config.forge.provider
        try:  # the tenant's own tokens, or the server's where configured: never another's
            credentials = self.forge_access.require(tenant, forge, f"run {claimed.id}")
        except GolemError as exc:
            self._fail(claimed, scoped, exc.message)
            return
        runner = Runner(
            self.config,
            engine=self.engine,
            store=scoped,
            pull_requests=scoped,
            credentials=credentials,
            on_event=self.hub.publish,
        )
        await runner.run(claimed.id, resumed=bool(claimed.steps))

    def _fail(self, claimed: RunState, store: SqlStore, reason: str) -> None:
        """End a claimed run before it starts: failed, with ``reason``, and its run_end."""
        claimed.status, claimed.error = "failed", reason
        store.save_run(claimed)
        end = RunFinished(run_id=claimed.id, status="failed", summary=reason)
        store.append_event(claimed.id, end)
        self.hub.publish(end)
        log.info("run %s failed before it started: %s", claimed.id, reason)

    async def stop(self) -> None:
        """Stop the workers; a run they had is left running, for a restart to resume."""
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers.clear()
