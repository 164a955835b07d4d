"""The run queue: runs wait in the store; this server's workers claim them one at a time,
fairly across tenants, and run them to their end: here, or, when the engine is a
``RunCarrier`` (a Ray cluster's), on the machine that holds the run's box; a run whose
machine died there is queued again and resumed by the next claim.

Several servers can share one PostgreSQL store: a claim is atomic, so no run is taken
twice. Idle workers wait for the store to announce a queued run (``golem.store.notify``;
on PostgreSQL, whichever server queued it), not on a timer. When a server starts, the runs
a dead server of this host left running are requeued (their boxes pruned first) and resume
from their current node, so a crash loses no run and leaves no box.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from golem.blueprint import RunRequest, RunState, fail_unstarted, orphaned, requeue_run
from golem.blueprint.book import RunBook, run_state
from golem.blueprint.events import RunNote
from golem.blueprint.retention import prune_runs
from golem.blueprint.writer import StoreWriter
from golem.core.config import GolemConfig
from golem.core.errors import GolemError, NodeLost, RunTaken, StoreUnavailable
from golem.core.isolation import IsolationTier
from golem.core.network import RemotePolicy
from golem.forge import ForgeCredentials
from golem.sandbox import Engine
from golem.service.forge_access import ForgeAccess
from golem.service.trust import floor_for, tier_for
from golem.store import (
    ACTIVE,
    QUEUE,
    RECHECK,
    RESUME,
    RETRY_AFTER,
    DeliveryRecord,
    PendingRecord,
    RunCap,
    RunRecord,
    Store,
    ThreadRecord,
)

__all__ = ["RunCarrier", "RunQueue"]

log = logging.getLogger("golem.service.queue")
STOP_TIMEOUT = 60.0  # seconds the shutdown waits for the workers to end their runs' boxes


@runtime_checkable
class RunCarrier(Protocol):
    """An engine that runs a claimed run's runner on another machine (a cluster's node)."""

    async def carry_run(
        self,
        claimed: RunState,
        tenant: str,
        credentials: ForgeCredentials,
        *,
        note: Callable[[str], Awaitable[None]],
    ) -> None:
        """Run the run to its end there (``note`` tells the run's followers something, as
        that it waits for room); NodeLost when that machine died under it."""
        ...


class RunQueue:
    """This server's workers over the store's queue."""

    def __init__(self, config: GolemConfig, engine: Engine, store: Store, server_id: str) -> None:
        self.config = config
        self.engine = engine
        self.store = store
        self.server_id = server_id
        self.forge_access = ForgeAccess(config, store)
        self._workers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Requeue what a dead server of this host left running, then start the workers."""
        await self.recover()
        for number in range(self.config.server.max_runs):
            self._workers.append(asyncio.ensure_future(self._work(number)))
        self._workers.append(asyncio.ensure_future(self._resume_paused()))
        if self.config.server.retention.days is not None:
            self._workers.append(asyncio.ensure_future(self._retain()))

    async def _retain(self) -> None:
        """Prune what old runs left, every ``[server.retention] interval`` seconds (a
        schedule: nothing to be woken by)."""
        while True:
            try:
                pruned = await prune_runs(self.store, self.config)
            except (GolemError, OSError) as exc:
                log.warning("pruning old runs failed (tried again later): %s", exc)
            else:
                if pruned:
                    log.info("pruned %d old runs: %s", len(pruned), ", ".join(pruned))
            await asyncio.sleep(self.config.server.retention.interval)

    async def _resume_paused(self) -> None:
        """Queue each paused run again at its resume time: one timer, set to the earliest
        in the store, woken when a run pauses (here or on a server sharing the store)."""
        with self.store.watch(RESUME) as paused:
            while True:
                paused.clear()
                try:
                    for run_id in await self.store.queue.resume_due(time.time()):
                        log.info("run %s resumes: its provider is expected back", run_id)
                    earliest = await self.store.queue.next_resume()
                except GolemError as exc:  # the database is away: look again soon
                    log.warning("cannot resume paused runs: %s", exc.message)
                    await paused.wait(RETRY_AFTER)
                    continue
                due = RECHECK if earliest is None else earliest - time.time()
                await paused.wait(min(due, RECHECK))  # RECHECK: a pause's notice was lost

    async def recover(self) -> list[str]:
        """Requeue runs whose runner on this host is gone; returns their ids."""
        host = socket.gethostname()
        orphans: list[RunState] = []
        for state in map(run_state, await self.store.runs.active()):
            owner_host = (state.owner_server or "").partition(":")[0]
            if owner_host not in ("", host):
                continue  # another host's server recovers its own runs
            if not orphaned(state):
                continue
            if state.status == "waiting" and state.pause is not None:
                continue  # paused: nobody's; it resumes at its time (_resume_paused)
            orphans.append(state)
        if orphans:
            await self.engine.prune()  # the dead runner's boxes
        for state in orphans:
            await requeue_run(RunBook(self.store), state)
        return [state.id for state in orphans]

    async def submit(
        self,
        request: RunRequest,
        tenant: str,
        *,
        role: str | None = None,
        remote_policy: RemotePolicy | None = None,
        tier: IsolationTier | None = None,
        outsider: str | None = None,
        containers: bool = False,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> RunState:
        """Queue a run of ``tenant``'s (its request checked by the runner), if the server
        has room as ``[server] overflow`` says; else QueueFull. ``remote_policy`` bounds
        the git remotes the run may reach (the submitting key's role's ``repos``). Its
        isolation tier is ``tier`` (what was asked, checked against the trust policy by
        whoever took the request; None: the default) raised here to the trust policy's
        floor (``service.trust.floor_for``): ``role``'s (the key's, the mapped person's),
        the tenant's, the repository's, the trigger's (``delivery.source``: every trigger
        starts its runs with a delivery, so none is left out) and, with ``outsider`` (why
        what the run reads is an outsider's), the outsiders'; a tier this server has no
        backend for is NoTierBackend. ``containers`` whether its box
        may get a container engine when its checks need one (the role's
        ``server.policies.<role>.containers``; a run no key asked for, none);
        ``delivery`` is the webhook delivery that asked for it, kept with it in the same
        step (DuplicateDelivery when it started a run already, on any server); ``thread``
        the chat thread it was asked in, kept with it too; ``pending`` the pending request
        it answers, claimed in the same step (PendingTaken: started already, anywhere)."""
        from golem.blueprint import Runner  # noqa: PLC0415 - the runner brings every layer

        source = delivery.source if delivery is not None else None
        floor = floor_for(
            self.config,
            tenant=tenant,
            role=role,
            repo=request.repo,
            source=source,
            outsiders=outsider is not None,
        )
        tier = tier_for(tier, floor, self.config.engine.default_tier)
        if tier is not None:  # NoTierBackend (503) now, rather than a run failing later
            self.config.engine.serving(tier)
        runner = Runner(self.config, engine=self.engine, store=self.store.for_tenant(tenant))
        run = await runner.submit(
            request,
            remote_policy=remote_policy,
            cap=self._cap(),
            tier=tier,
            containers=containers,
            delivery=delivery,
            thread=thread,
            pending=pending,
        )
        if floor is not None:
            why = f"; {outsider}" if outsider is not None else ""
            log.info("run %s runs in the %s tier (%s%s)", run.id, run.tier, floor.rule, why)
        return run

    def _cap(self) -> RunCap:
        """The room the store must have for a new run: limits count every server's runs
        in the shared store (set them alike on each server), checked with the insert."""
        server = self.config.server
        if server.overflow == "queue":
            reason = f"{server.max_queued} runs wait already (server.max_queued)"
            return RunCap(
                statuses=("queued",),
                limit=server.max_queued,
                reason=reason,
                retry_after=server.retry_after,
            )
        reason = f"all {server.max_runs} runners are busy (server.max_runs)"
        return RunCap(
            statuses=("queued", *ACTIVE),
            limit=server.max_runs,
            reason=reason,
            retry_after=server.retry_after,
        )

    async def _work(self, number: int) -> None:
        with self.store.watch(QUEUE) as queued:
            while True:
                queued.clear()
                try:
                    record = await self.store.queue.claim_next(self.server_id)
                except GolemError as exc:  # the database is away: look again soon
                    log.warning("worker %d cannot claim a run: %s", number, exc.message)
                    await queued.wait(RETRY_AFTER)
                    continue
                if record is None:
                    await queued.wait()
                    continue
                try:
                    await self._carry(record, number)
                except RunTaken as exc:  # another runner has it: nothing of it is ours to end
                    log.warning("worker %d lets run %s go: %s", number, record.id, exc.message)
                except Exception as exc:  # keep the worker alive; never leave the run running
                    log.exception("worker %d: run %s ended with an error", number, record.id)
                    try:
                        await self._settle(record.id, record.tenant, exc)
                    except Exception:  # the worker outlives any one run
                        log.exception("worker %d: run %s could not be ended", number, record.id)

    async def _carry(self, record: RunRecord, number: int) -> None:
        """Run a claimed run to its end. The store away as it starts (its tokens or its
        state unreadable) or between its steps is waited out, and the run goes on from its
        current node: an outage never fails a run."""
        while True:
            try:
                await self._run(run_state(record), record.tenant)
            except StoreUnavailable as exc:
                log.warning("worker %d: run %s waits for the store: %s", number, record.id, exc)
                await asyncio.sleep(RETRY_AFTER)
            else:
                return

    async def _run(self, claimed: RunState, tenant: str) -> None:
        from golem.blueprint import Runner  # noqa: PLC0415 - the runner brings every layer

        scoped = self.store.for_tenant(tenant)
        forge = claimed.request.forge or self.config.forge.provider
        try:  # the tenant's own tokens, or the server's where configured: never another's
            credentials = await self.forge_access.require(tenant, forge, f"run {claimed.id}")
        except StoreUnavailable:
            raise
        except GolemError as exc:
            await fail_unstarted(RunBook(scoped), claimed, exc.message)
            log.info("run %s failed before it started: %s", claimed.id, exc.message)
            return
        if isinstance(self.engine, RunCarrier):
            book = RunBook(scoped)

            async def note(message: str) -> None:
                await book.append(RunNote(run_id=claimed.id, message=message))

            try:
                await self.engine.carry_run(claimed, tenant, credentials, note=note)
            except NodeLost as exc:
                await self._requeue(claimed.id, book, exc.message)
            return
        runner = Runner(self.config, engine=self.engine, store=scoped, credentials=credentials)
        await runner.run(claimed.id, resumed=bool(claimed.steps))

    async def _requeue(self, run_id: str, book: RunBook, why: str) -> None:
        """Queue again a run whose machine died under it, as its runner last saved it."""
        state = await book.load(run_id)
        if state is None or state.finished:
            return
        if await requeue_run(book, state):
            await book.append(RunNote(run_id=run_id, message=why))
            log.warning("%s", why)

    async def _settle(self, run_id: str, tenant: str, exc: Exception) -> None:
        """End a run whose runner raised before it could end it: failed, with the error."""
        book = RunBook(self.store.for_tenant(tenant))
        reason = exc.message if isinstance(exc, GolemError) else f"internal error: {exc!r}"
        writes = StoreWriter()
        current: list[RunState | None] = []

        async def load() -> None:
            current.append(await book.load(run_id))

        writes.put(load)  # tried again while the store is away, as the run's writes are
        try:
            await writes.flush()
        except GolemError:
            log.exception("run %s: cannot read it to end it", run_id)
            return
        state = current[-1] if current else None
        if state is not None and not state.finished:
            state.owner_pid = state.owner_start = None
            await fail_unstarted(book, state, reason)
            log.info("run %s ended failed: %s", run_id, reason)

    async def stop(self) -> None:
        """Stop the workers; a run they had is left running, for a restart to resume."""
        for worker in self._workers:
            worker.cancel()
        if self._workers:  # a worker removes its run's box first; never wait without end
            _, stuck = await asyncio.wait(self._workers, timeout=STOP_TIMEOUT)
            if stuck:
                log.error("%d workers did not stop within %ss", len(stuck), STOP_TIMEOUT)
        for worker in self._workers:
            if worker.done() and not worker.cancelled() and worker.exception() is not None:
                log.error("a worker had failed: %r", worker.exception())
        self._workers.clear()
