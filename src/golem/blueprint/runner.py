"""The runner: executes a blueprint's nodes in order, saving the run after each one.

A run is owned by the process that runs it (its pid and start time are in the state). A
cancel request in the store stops it at once (the store wakes the runner: no polling); a
run whose owner died is resumed by ``resume``: its box was pruned, a new one gets the host
checkout (which holds the result of the last finished node), and the node that was running
starts again. Whatever happens, the run's box is removed.

A runner writes its run under the claim it read (``RunState.claim``): once the run is queued
or claimed again (its machine was declared dead while it still ran), the store refuses what
it writes and the store's change wakes it, and it stops without a word more (RunTaken).

A node whose model provider stays down pauses the run (``ProviderDown``): it is kept
``waiting`` with its reason and the time it resumes (the provider's word, else
``[models] resume_after`` doubling with each pause in a row), owned by nobody; the queue
resumes it then (``golem.service.queue``), from that node, the agent's conversation and
checkout as they were. The time a node is paused counts against no wall-clock budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import Literal

from golem.blueprint.book import RunBook
from golem.blueprint.checkpoint import Checkpoints
from golem.blueprint.events import (
    NodeFinished,
    NodeStarted,
    RunEvent,
    RunFinished,
    RunPaused,
    RunStarted,
)
from golem.blueprint.execution import Execution
from golem.blueprint.lifecycle import (
    mark_cancelled,
    mark_failed,
    mark_finished,
    mark_paused,
    mark_running,
    orphaned,
)
from golem.blueprint.loader import blueprint_text, parse_blueprint
from golem.blueprint.model import (
    END,
    Blueprint,
    GateNode,
    Node,
    Outcome,
)
from golem.blueprint.pausing import pause_of, unpaused
from golem.blueprint.state import NodeRecord, RunRequest, RunState
from golem.blueprint.steps.agent import check_toolshed
from golem.blueprint.steps.attempts import check_attempts
from golem.blueprint.steps.dispatch import host_actions_for, run_step
from golem.core.config import GolemConfig
from golem.core.errors import (
    ForgeAuthError,
    GitRemoteError,
    GolemError,
    InvalidRequest,
    ProviderDown,
    RunTaken,
    StoreUnavailable,
)
from golem.core.events import EventSink
from golem.core.ids import new_id
from golem.core.isolation import IsolationTier
from golem.core.masking import mask_log_records, masking_logs
from golem.core.network import RemotePolicy
from golem.forge import Forge, ForgeCredentials, make_forge, refused_credentials
from golem.sandbox import Engine, process_start_time
from golem.store import (
    RETRY_AFTER,
    DeliveryRecord,
    PendingRecord,
    RunCap,
    Store,
    ThreadRecord,
    check_claim,
)

__all__ = ["Runner"]

log = logging.getLogger("golem.blueprint.runner")


class Runner:
    """Runs blueprints. Dependencies come in: the engine, the store, the forge."""

    def __init__(
        self,
        config: GolemConfig,
        *,
        engine: Engine,
        store: Store,
        forge: Forge | None = None,
        credentials: ForgeCredentials | None = None,
        on_event: EventSink[RunEvent] | None = None,
        checkpoints: Checkpoints | None = None,
        owner: tuple[int, int | None] | None = None,
        claim: int | None = None,
    ) -> None:
        """``store`` keeps the runs (and the local forge's records); ``forge`` serves
        every run when given, otherwise each run gets the one its request names.
        ``credentials`` are the forge tokens the runs may use (default: the host's).
        ``checkpoints`` keep each run's checkout in the store after every node, so another
        machine can resume it (a cluster's node); ``owner`` is the process (pid, start)
        that answers for the runs, when it is not this one (a cluster's control plane),
        and ``claim`` the claim it took the run under (RunTaken if the run's is another)."""
        self.config = config
        self.engine = engine
        self.store = store
        self.book = RunBook(store)
        self.forge = forge
        self.credentials = credentials or ForgeCredentials.from_config(
            config.forge, config.state_dir
        )
        self.on_event = on_event
        self.checkpoints = checkpoints
        self.owner = owner
        self.claim = claim

    async def submit(
        self,
        request: RunRequest,
        *,
        remote_policy: RemotePolicy | None = None,
        cap: RunCap | None = None,
        tier: IsolationTier | None = None,
        containers: bool = True,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> RunState:
        """Record a new run (queued); its blueprint is checked and kept with it.
        ``remote_policy`` bounds the git remotes it may reach (a server role's); ``cap``
        is the store's room for it (a server's limits: else QueueFull); ``tier`` the
        isolation tier of its boxes as the server's trust policy gave it (default: the one
        the request asks for; a cluster places it on that tier's nodes); ``containers``
        whether its box may get a container engine when its checks need one (a local run
        may; a server's as the role's policy says);
        ``delivery`` the webhook delivery that asked for it, kept with it (one that started
        a run already: DuplicateDelivery); ``thread`` the chat thread it was asked in;
        ``pending`` the pending request it answers, claimed with it (PendingTaken: another
        server started it)."""
        if not (request.task or request.issue or request.follow_up):
            raise InvalidRequest("a run needs a task or an issue: give --task or --issue")
        source, origin = blueprint_text(request.blueprint)
        blueprint = host_actions_for(parse_blueprint(source, origin), request)
        check_toolshed(blueprint, self.config)
        check_attempts(blueprint, request, self.config)
        state = RunState(
            id=new_id("run"),
            request=request,
            blueprint=blueprint.name,
            blueprint_source=source,
            remote_policy=remote_policy,
            tier=tier if tier is not None else request.tier,
            containers=containers,
        )
        state.workspace = str(self.config.state_dir / "runs" / state.id / "repo")
        state.current = blueprint.first
        await self.book.create(state, cap=cap, delivery=delivery, thread=thread, pending=pending)
        return state

    async def start(self, request: RunRequest) -> RunState:
        """Submit a run and run it to its end."""
        return await self.run((await self.submit(request)).id)

    async def resume(self, run_id: str) -> RunState:
        """Go on with a run whose runner died, or that failed for its forge credentials
        (``resumable``): prune its box, run from its current node."""
        state = await self._load(run_id)
        if state.finished and not state.resumable:
            return state
        if not orphaned(state):
            where = state.owner_server or f"process {state.owner_pid}"
            raise InvalidRequest(
                f"run {run_id} is being run by {where}; "
                "cancel it with `golem runs cancel` or wait for it"
            )
        await self.engine.prune()
        if state.resumable:  # the credentials were fixed, the person says: on from the node
            mark_running(state)
            await self.book.save(state)
        return await self.run(run_id, resumed=True)

    async def _load(self, run_id: str) -> RunState:
        state = await self.book.load(run_id)
        if state is None:
            raise InvalidRequest(f"no run {run_id!r}; see `golem runs ls`")
        return state

    async def run(self, run_id: str, *, resumed: bool = False) -> RunState:
        """Run from the run's current node to its end (or a cancel)."""
        state = await self._load(run_id)
        if state.finished:
            return state
        check_claim(run_id, state.claim, self.claim)
        blueprint = host_actions_for(
            parse_blueprint(state.blueprint_source, state.blueprint), state.request
        )
        if self.owner is not None:  # another machine's process: its start time is its own
            state.owner_pid, state.owner_start = self.owner
        else:
            state.owner_pid = os.getpid()
            state.owner_start = process_start_time(state.owner_pid)
        mark_running(state)
        forge = self.forge or make_forge(
            state.request.forge, self.config.forge, self.store, self.credentials
        )
        ex = Execution(
            state,
            blueprint,
            config=self.config,
            book=self.book,
            engine=self.engine,
            forge=forge,
            credentials=self.credentials,
            on_event=self.on_event,
        )
        mask_log_records()
        with masking_logs(ex.secrets.current):
            return await self._run(ex, blueprint, resumed=resumed)

    async def _run(self, ex: Execution, blueprint: Blueprint, *, resumed: bool) -> RunState:
        state, run_id = ex.state, ex.state.id
        ex.save()
        await ex.writes.flush()  # running, and whose, before any node starts
        ex.emit(RunStarted(run_id=run_id, blueprint=blueprint.name, resumed=resumed))
        started = time.monotonic()
        stopped = taken = False  # from outside (its machine or owner goes); taken from it
        work = asyncio.ensure_future(self._nodes(ex, blueprint, resumed=resumed))
        watcher = asyncio.ensure_future(self._watch_cancel(state, work))
        try:
            await work
        except asyncio.CancelledError:
            asked = watcher.result() if watcher.done() else None
            if isinstance(asked, RunTaken):
                stopped = taken = True
                raise asked from None
            if asked != "cancel":
                stopped = True
                raise  # cancelled from outside: the caller's decision, not a cancel request
            mark_cancelled(state, "cancelled on request")
        except RunTaken:  # a write was refused: it is another runner's run now
            stopped = taken = True
            raise
        except GolemError as exc:
            _fail(state, exc)
        except Exception as exc:  # a bug must end the run, not leave it "running" forever
            log.exception("run %s: internal error", run_id)
            mark_failed(state, f"internal error: {type(exc).__name__}: {exc}")
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, GolemError):
                await watcher
            await _quietly(ex.close())
            state.owner_pid = None
            if not taken and not (stopped and self.checkpoints is not None):  # another
                ex.save()  # machine may have resumed it from its last node: never overwrite
        if self.checkpoints is not None and state.finished:
            await _quietly(self.checkpoints.end(ex))
        if state.status == "waiting" and state.pause is not None:
            await ex.writes.flush()  # paused, not ended: no run_end
            return state
        ex.emit(
            RunFinished(
                run_id=run_id,
                status=state.status,
                summary=state.summary,
                pr=state.pr,
                cost_usd=state.cost_usd,
                duration=time.monotonic() - started,
            )
        )
        await ex.writes.flush()
        return state

    async def _watch_cancel(
        self, state: RunState, work: asyncio.Future[None]
    ) -> Literal["cancel"] | RunTaken | None:
        """Cancel ``work`` when the store says the run should stop (``cancel``) or was
        claimed again (the RunTaken to raise). The store wakes it when the run is asked to
        stop or is queued again (its re-check interval only covers a lost notification)."""
        run_id, claim = state.id, state.claim
        with self.book.watch_control(run_id) as asked:
            while not work.done():
                asked.clear()
                try:
                    current = await self.book.load(run_id)
                except GolemError as exc:  # the store is away: the run goes on; look again
                    log.warning("run %s: cannot read its cancel requests: %s", run_id, exc)
                    await asked.wait(RETRY_AFTER)
                    continue
                try:
                    check_claim(run_id, current.claim if current else claim, claim)
                except RunTaken as taken:
                    work.cancel()
                    return taken
                if current is not None and current.cancel_requested:
                    work.cancel()
                    return "cancel"
                await asked.wait()
        return None

    async def _nodes(self, ex: Execution, blueprint: Blueprint, *, resumed: bool) -> None:
        state = ex.state
        if self.checkpoints is not None:  # this machine's checkout, from the last save
            await self.checkpoints.begin(ex, resumed=resumed)
            ex.save()
        steps = 0
        while state.current is not None and state.current != END:
            steps += 1
            if steps > blueprint.max_steps:
                raise InvalidRequest(
                    f"the run executed {blueprint.max_steps} nodes without ending; raise the "
                    "blueprint's max_steps or break its cycle"
                )
            node = blueprint.node(state.current)
            spent = state.cost_usd
            resumed_at = time.time()
            try:
                outcome, detail, began = await self._node(ex, node)
            except ProviderDown as paused:
                await self._pause(ex, node, paused, resumed_at, spent)
                return
            record = NodeRecord(
                node=node.id,
                kind=node.kind,
                outcome=outcome,
                started=began,
                ended=time.time(),
                detail=detail,
                cost_usd=state.cost_usd - spent,
            )
            state.steps.append(unpaused(state, record, resumed_at))
            following = node.successor(outcome)
            if following is None:
                raise InvalidRequest(f"node {node.id!r} has no edge for outcome {outcome!r}")
            if self.checkpoints is not None:  # before the state: never behind it
                await self.checkpoints.save(ex, node.id)
            state.current = following
            ex.save()
            await ex.writes.flush()  # a node's result is kept before the next node starts
        mark_finished(state)
        state.current = None

    async def _pause(
        self, ex: Execution, node: Node, paused: ProviderDown, resumed_at: float, spent: float
    ) -> None:
        """Keep the run paused at ``node`` (see the module); its checkout is kept first
        where a machine that resumes it needs it (a checkpoint)."""
        state = ex.state
        kept = pause_of(
            state, node.id, paused, resumed_at, self.config.models, ex.paused_step, spent
        )
        mark_paused(state, kept)
        if self.checkpoints is not None:
            await self.checkpoints.save(ex, node.id)
        ex.save()  # kept paused before anyone hears of the pause
        ex.emit(
            RunPaused(
                run_id=state.id,
                node=node.id,
                reason=kept.reason,
                resume_at=kept.resume_at,
            )
        )

    async def _node(self, ex: Execution, node: Node) -> tuple[Outcome, str, float]:
        began = time.time()
        ex.emit(NodeStarted(run_id=ex.state.id, node=node.id, kind=node.kind))
        limit = None if isinstance(node, GateNode) else node.timeout  # a gate's is its wait
        try:
            async with asyncio.timeout(limit):
                outcome, detail = await self._through_outages(ex, node)
        except TimeoutError:
            await ex.sync()
            outcome, detail = "failure", f"timed out after {node.timeout:g}s"
        ex.emit(
            NodeFinished(
                run_id=ex.state.id,
                node=node.id,
                outcome=outcome,
                detail=detail,
                duration=time.time() - began,
            )
        )
        return outcome, detail, began

    async def _through_outages(self, ex: Execution, node: Node) -> tuple[Outcome, str]:
        """A node's outcome; the store away in the middle of it (a local forge's records,
        say) is waited out and the node run again, as a resume would run it: an outage
        never fails a run. The node's time limit still holds."""
        while True:
            try:
                return await run_step(ex, node)
            except StoreUnavailable as exc:
                ex.note(f"runs again once the store is back: {exc.message}", node.id)
                await asyncio.sleep(RETRY_AFTER)


def _fail(state: RunState, error: GolemError) -> None:
    """End the run as failed with ``error``'s message. A run a forge refused for its
    credentials (an expired or revoked token, an App key or refresh token refused) keeps
    its place: the message says where its work is and how to go on once they are fixed."""
    mark_failed(state, error.message)
    refused = isinstance(error, ForgeAuthError) or (
        isinstance(error, GitRemoteError) and refused_credentials(error)
    )
    if not refused or state.current is None:
        return
    state.resumable = True
    kept = ""
    if state.commit:
        kept = f" golem kept the run's work: commit {state.commit[:12]} on branch {state.branch}"
    elif state.branch:
        kept = f" golem kept the run's checkout: branch {state.branch}"
    where = f" in {state.workspace}." if kept else ""
    state.error = (
        f"{error.message}.{kept}{where} Once the credentials are fixed, `golem runs resume "
        f"{state.id}` goes on from {state.current}"
    )


async def _quietly(work: object) -> None:
    with contextlib.suppress(Exception):
        await work  # type: ignore[misc]
