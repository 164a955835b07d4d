"""The server's goal loops: each active loop is driven by one task, which starts its next
iteration's run, waits for that run's end (woken by the store, whichever server runs it),
judges it and goes on, pauses or ends. Everything is kept in the store as it happens, so a
restarted server (or another one sharing the store) takes each loop up where it stands.

An iteration's run is started once, whoever starts it: it is kept with the once-only key
``<loop>#<n>`` (the store's delivery keys), so a second start (a restart between the run
and its record, two servers at once) finds the run the first one made."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.blueprint.control import cancel_run
from golem.core.errors import DuplicateDelivery, GolemError, QueueFull, RunConflict
from golem.core.ids import new_id
from golem.service.documents import Shelf
from golem.service.loops.judge import judge_iteration
from golem.service.loops.model import KIND, GoalLoop, Iteration, LoopRequest, LoopStatus
from golem.service.loops.runs import iteration_request
from golem.service.state import ServerState
from golem.store import RECHECK, RETRY_AFTER, DeliveryRecord, Store

__all__ = ["GoalLoops", "loop_shelf", "move_loop", "new_loop", "stop_loop"]

log = logging.getLogger("golem.service.loops")


def loop_shelf(state: ServerState) -> Shelf[GoalLoop]:
    """Every tenant's loops."""
    return Shelf(state.store, KIND, GoalLoop)


def new_loop(tenant: str, role: str | None, request: LoopRequest) -> GoalLoop:
    """A new active loop of ``tenant`` (asked with a key of ``role``; None: the CLI)."""
    return GoalLoop(id=new_id("loop"), tenant=tenant, role=role, request=request)


class GoalLoops:
    """The tasks that drive this server's view of the store's goal loops."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.shelf = loop_shelf(state)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._watching: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Drive every loop that has not ended, and each one made from now on."""
        self._watching = asyncio.ensure_future(self._watch())

    async def close(self) -> None:
        """Stop driving (a restarted server takes the loops up again)."""
        tasks = [*self._tasks.values(), *([self._watching] if self._watching else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def _watch(self) -> None:
        with self.shelf.watch() as changed:
            while True:
                changed.clear()
                try:
                    for kept in await self.shelf.all():
                        if not kept.model.ended and kept.model.id not in self._tasks:
                            self._spawn(kept.model.id, self._drive(kept.model.id))
                except GolemError as exc:  # the store is away: look again soon
                    log.warning("goal loops: cannot read them: %s", exc.message)
                    await changed.wait(RETRY_AFTER)
                    continue
                await changed.wait(RECHECK)

    def _spawn(self, loop_id: str, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks[loop_id] = task
        task.add_done_callback(lambda done: self._ended(loop_id, done))

    def _ended(self, loop_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(loop_id) is task:
            del self._tasks[loop_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("goal loop %s: driving it failed", loop_id, exc_info=task.exception())

    async def _drive(self, loop_id: str) -> None:
        """Start, wait for and judge the loop's iterations until it ends or pauses."""
        while True:
            kept = await self.shelf.load(loop_id)
            if kept is None:
                return
            loop = kept.model
            current = loop.current
            if current is not None:
                await self._judge(loop, current)
            elif loop.status != "active":
                return
            else:
                await self._start_iteration(loop)

    async def _judge(self, loop: GoalLoop, current: Iteration) -> None:
        run = await self._end_of(loop, current.run_id)

        def judged(now: GoalLoop) -> GoalLoop | None:
            if now.current is None or now.current.run_id != current.run_id:
                return None  # judged already (by another server)
            if run is None:
                now.iterations.pop()
                return now
            return judge_iteration(now, run)

        after = await self.shelf.change(loop.id, judged)
        if after is not None and after.ended:
            log.info("goal loop %s: %s (%s)", loop.id, after.status, after.reason)

    async def _end_of(self, loop: GoalLoop, run_id: str) -> RunState | None:
        """The run once it has ended (None: it is gone)."""
        book = RunBook(self.state.store.for_tenant(loop.tenant))
        with book.watch(run_id) as changed:
            while True:
                changed.clear()
                run = await book.load(run_id)
                if run is None or run.finished:
                    return run
                await changed.wait(RECHECK)

    async def _start_iteration(self, loop: GoalLoop) -> None:
        number = len(loop.iterations) + 1
        try:
            run_id = await self._submit(loop, number)
        except QueueFull as full:
            log.info("goal loop %s waits for room: %s", loop.id, full.reason)
            await asyncio.sleep(RETRY_AFTER)  # a back-off: the queue announces no room
            return
        except GolemError as exc:
            await self._stop(loop.id, f"iteration {number} could not start: {exc.message}")
            return

        def started(now: GoalLoop) -> GoalLoop | None:
            if len(now.iterations) >= number:
                return None
            now.iterations.append(Iteration(number=number, run_id=run_id))
            return now

        await self.shelf.change(loop.id, started)
        log.info("goal loop %s: iteration %d is run %s", loop.id, number, run_id)

    async def _submit(self, loop: GoalLoop, number: int) -> str:
        """The run of iteration ``number``, started once whoever asks."""
        config = self.state.config
        request = iteration_request(loop, number)
        role = config.server.policies[loop.role] if loop.role else None
        delivery = DeliveryRecord(source="loop", ids=(f"{loop.id}#{number}",))
        try:
            run = await self.state.queue.submit(
                request,
                loop.tenant,
                role=loop.role,
                remote_policy=role.repos if role is not None else None,
                tier=request.tier,
                containers=role.containers if role is not None else True,
                delivery=delivery,
            )
        except DuplicateDelivery as twice:
            return twice.run_id
        return run.id

    async def _stop(self, loop_id: str, reason: str) -> None:
        def stopped(now: GoalLoop) -> GoalLoop | None:
            if now.ended:
                return None
            now.status, now.reason = "stopped", reason
            return now

        await self.shelf.change(loop_id, stopped)
        log.warning("goal loop %s stopped: %s", loop_id, reason)


async def stop_loop(store: Store, loop: GoalLoop, who: str) -> GoalLoop | None:
    """Stop ``loop`` (asked by ``who``) in ``store``: it starts nothing more, and its
    current run is cancelled; the loop as kept then (the API and the CLI alike)."""
    shelf = Shelf(store, KIND, GoalLoop)

    def stopped(now: GoalLoop) -> GoalLoop | None:
        if now.ended:
            return None
        now.status, now.reason = "stopped", f"stopped by {who}"
        return now

    after = await shelf.change(loop.id, stopped)
    current = after.current if after is not None else None
    if current is not None:
        with contextlib.suppress(RunConflict):  # it ended meanwhile
            await cancel_run(RunBook(store.for_tenant(loop.tenant)), current.run_id)
    return after


def move_loop(old: str, new: LoopStatus, why: str) -> Callable[[GoalLoop], GoalLoop | None]:
    """The change that moves a loop from status ``old`` to ``new`` (pause, resume)."""

    def moved(now: GoalLoop) -> GoalLoop | None:
        if now.status != old:
            return None
        now.status, now.reason = new, why
        return now

    return moved
