"""Best-of-N: an agent node's attempts, each its own implement and verify loop in a box of
its own, judged by the repository's checks.

Every attempt starts from the run's prepared point: its checkout is a copy of the run's (on
the host), and its box starts from a snapshot of the run's box taken after its install and
setup (the box's ``.git`` removed for it and placed again from the host after: a ``.git``
never crosses from a box), the host's ``.git`` placed and the tree moved to its checkout
as a run's from a prepared snapshot is (``golem.blueprint.prepared``); setup is not run
again when nothing it depends on changed. Where no snapshot can be taken (a backend
without snapshots, a box with containers, a refused entry, submodules), its box is
prepared as the run's was: the checkout copied in, the dependencies placed, setup run
again. Each has its own trajectory and cost; at most ``[engine] attempt_boxes`` work at
once. They draw on one budget, the run's: once it is spent the attempts still working stop.
An attempt that can no longer win stops as soon as that is known: a check of its last
verification (its fix rounds spent) fails because of its change while another attempt is
verified (whichever of the two comes first).

The winner is chosen in ``attempt_choice``'s order: verified, the most passing checks, the
model judge's choice when it is on, the smallest diff (lines added and deleted), the lowest
number. Without a verified one, the best of the others is carried on (unverified), and the
loop node ends as that attempt's loop ended. The chosen attempt's box and checkout become
the run's; the loop node after the agent node ends at once with its outcome
(``RunState.attempts_concluded``). An attempt that ends unverified, fails or stops has its
box removed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path
from typing import Literal

from golem.agent import AgentEvent, Budget, ModelAnswered, Usage
from golem.blueprint.dependencies import cache_paths as dependency_paths
from golem.blueprint.dependencies import image_of, in_checkout
from golem.blueprint.execution import Execution
from golem.blueprint.model import END, AgentNode, Blueprint, LoopNode
from golem.blueprint.prepared import PreparedRecord, place_git, remove_in_box, snapshot_name
from golem.blueprint.state import AttemptRecord, RunRequest
from golem.blueprint.steps.agent import run_agent, run_agent_node
from golem.blueprint.steps.attempt_choice import Contender, judge_tie, rank, why_lost, why_won
from golem.blueprint.steps.baseline import cache_paths
from golem.blueprint.steps.checks import run_checks
from golem.blueprint.steps.loop import run_loop
from golem.blueprint.workspace import layout_of
from golem.checks import CheckResult, fingerprint, held_against
from golem.core.config import GolemConfig
from golem.core.errors import (
    BudgetSpent,
    GolemError,
    InvalidRequest,
    ProviderDown,
    SnapshotUnsupported,
    UnsafeBoxOutput,
)
from golem.core.events import EventSink
from golem.core.spec import WORKSPACE
from golem.sandbox import Box

__all__ = ["check_attempts", "run_agent_or_attempts", "run_attempts"]

PREPARED = (
    "prepared as the run's box: its checkout copied in, dependencies placed, setup run "
    "again (no snapshot of the run's box)"
)


async def run_agent_or_attempts(
    ex: Execution, node: AgentNode
) -> tuple[Literal["success", "failure"], str]:
    """An agent node: one agent step, or its attempts when the run makes several (the
    request's number, else the node's; InvalidRequest above ``[engine] max_attempts``)."""
    count = _attempts(node, ex.state.request, ex.config)
    if count > 1:
        return await run_attempts(ex, node, count)
    return await run_agent_node(ex, node)


def check_attempts(blueprint: Blueprint, request: RunRequest, config: GolemConfig) -> None:
    """InvalidRequest, before a run is recorded, when it asks for more attempts than
    ``[engine] max_attempts`` allows, or for attempts of an agent node that leads to no
    loop node to verify them."""
    for node in blueprint.nodes:
        if isinstance(node, AgentNode) and _attempts(node, request, config) > 1:
            target = node.successor("success")
            following = blueprint.node(target) if target is not None and target != END else None
            if not isinstance(following, LoopNode):
                raise InvalidRequest(
                    f"agent node {node.id!r} would make several attempts but leads to no "
                    "loop node to verify them: give it a loop node as its next, or ask for "
                    "one attempt"
                )


def _attempts(node: AgentNode, request: RunRequest, config: GolemConfig) -> int:
    asked = request.attempts or node.attempts
    most = config.engine.max_attempts
    if asked > most:
        raise InvalidRequest(
            f"{asked} attempts asked for node {node.id!r}; this golem allows at most {most} "
            "([engine] max_attempts): ask for fewer"
        )
    return asked


class Attempt(Execution):
    """One attempt: the run's state copied, its own checkout, box and models; its spending
    charged to the run as well, its budget the run's."""

    def __init__(self, parent: Execution, pool: _Pool, record: AttemptRecord) -> None:
        state = parent.state.model_copy(deep=True)
        state.workspace = record.workspace
        state.trajectories, state.checks, state.attempts = [], [], []
        state.rounds, state.usage, state.cost_usd, state.turns = 0, Usage(), 0.0, 0
        state.summary, state.verified, state.unverified = "", False, None
        state.started_from = None
        super().__init__(
            state,
            parent.blueprint,
            config=parent.config,
            book=parent.book,
            engine=parent.engine,
            forge=parent.forge,
            credentials=parent.credentials,
            on_event=parent.event_sink,
        )
        self.secrets, self.writes = parent.secrets, parent.writes
        self.parent, self.pool, self.record = parent, pool, record
        self.in_step = 0.0
        """What the agent step working now has cost so far (not charged yet)."""
        self.loop_outcome: Literal["success", "failure"] = "failure"
        self.loop: LoopNode | None = None
        """Its loop node (named for it), once its agent step is done."""
        self.hopeless = ""
        """Set when a failure is held against it with its fix rounds spent: it cannot be
        verified any more."""
        self.stopped_for = ""
        """Why it was stopped on its own (it cannot win), when it was."""

    def save(self) -> None:
        """Keep the attempt's progress in its record of the run's state."""
        state, record = self.state, self.record
        record.checks, record.rounds, record.summary = state.checks, state.rounds, state.summary
        record.cost_usd, record.turns = state.cost_usd + self.in_step, state.turns
        record.trajectories = list(state.trajectories)
        self.parent.save()

    def charge(self, usage: Usage, cost: float, turns: int) -> None:
        super().charge(usage, cost, turns)
        self.parent.charge(usage, cost, turns)
        self.in_step = 0.0

    def step_budget(self, own: Budget) -> Budget:
        return self.parent.step_budget(own)

    def agent_sink(self, node: str) -> EventSink[AgentEvent]:
        inner = super().agent_sink(node)

        def sink(event: AgentEvent) -> None:
            inner(event)
            if isinstance(event, ModelAnswered):
                self.in_step = event.cost_so_far
                self.pool.spent_check()

        return sink

    def check_judged(self, node: str, result: CheckResult, round_: int) -> None:
        loop = self.loop
        if loop is None or node != loop.id or round_ < loop.max_rounds:
            return
        if held_against([result]) and not self.hopeless:
            self.hopeless = (
                f"its {result.name} check still fails with its fix rounds spent ({loop.max_rounds})"
            )
            self.pool.stop_hopeless()

    async def prepare(self) -> Box:
        """Its box, brought to the run's prepared point: from the snapshot of the run's
        box when there is one (setup skipped when nothing it depends on changed)."""
        box = await self.box()
        started = self.state.started_from
        if started is None:
            self.record.prepared = PREPARED
        else:
            self.record.prepared = (
                f"started from the snapshot of the run's box {started.describe()}"
            )
        if started is None or not started.setup_skipped:
            await self._setup()
        else:
            self.record.prepared += ", setup not run again"
        await self.mark_dependencies()
        if self.parent.state.base_tree is not None:
            self.state.base_tree = await fingerprint(box, exclude=cache_paths(self))
        return box

    async def _setup(self) -> None:
        setup = await run_checks(self, self.record_node, ["setup"], stop_at_failure=True)
        failed = [result for result in setup if not result.passed]
        if failed:
            raise InvalidRequest(
                f"the repository's setup failed in attempt {self.record.number}'s box: "
                f"{failed[0].command} exited {failed[0].exit_code}"
            )

    @property
    def record_node(self) -> str:
        return f"attempt{self.record.number}"


class _Pool:
    """The attempts of one node: the budget they share, and stopping them."""

    def __init__(self, ex: Execution) -> None:
        self.ex = ex
        self.attempts: list[Attempt] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.stopped: str | None = None

    def spent_check(self) -> None:
        """Stop every attempt still working once the run's dollars are spent."""
        usd = self.ex.run_budget().usd
        if usd is None or self.stopped is not None:
            return
        spent = self.ex.state.cost_usd + sum(attempt.in_step for attempt in self.attempts)
        if spent >= usd:
            self.stop(f"the run's budget (${usd:.2f}) is spent (${spent:.2f})")

    def stop_hopeless(self) -> None:
        """Stop each attempt still working that can no longer win: it cannot be verified
        any more (``Attempt.hopeless``) while another is."""
        verified = next((a for a in self.attempts if a.record.status == "verified"), None)
        if verified is None:
            return
        for attempt, task in zip(self.attempts, self.tasks, strict=True):
            if attempt.hopeless and not attempt.stopped_for and attempt.record.status == "running":
                attempt.stopped_for = (
                    f"it cannot win: {attempt.hopeless}, and attempt "
                    f"{verified.record.number} is verified"
                )
                task.cancel()

    def stop(self, reason: str, *, but_this: bool = False) -> None:
        """Stop every attempt still working (or waiting for a slot), for ``reason``;
        ``but_this``: not the one calling (it is ending already, and cleans up)."""
        if self.stopped is not None:
            return
        self.stopped = reason
        self.ex.note(f"attempts stopped: {reason}")
        for task in self.tasks:
            if not (but_this and task is asyncio.current_task()):
                task.cancel()


async def run_attempts(
    ex: Execution, node: AgentNode, count: int
) -> tuple[Literal["success", "failure"], str]:
    """Make ``count`` attempts of ``node`` (see the module); ``success`` when one is
    chosen to carry on."""
    loop = ex.blueprint.node(node.successor("success") or "")
    if not isinstance(loop, LoopNode):
        raise InvalidRequest(
            f"agent node {node.id!r} makes {count} attempts but leads to no loop node to "
            "verify them: give it a loop node as its next"
        )
    await ex.sync()
    source = await _snapshot_of_run_box(ex)
    pool = _Pool(ex)
    ex.state.attempts = []
    tries = ex.run_dir / "attempts"
    made = 1 + sum(1 for _ in tries.iterdir()) if tries.is_dir() else 1  # a resumed run's
    for number in range(1, count + 1):  # never over the checkout of an earlier round
        workspace = tries / str(made) / str(number) / "repo"
        await asyncio.to_thread(_copy_checkout, ex.workspace, workspace)
        record = AttemptRecord(number=number, prepared=PREPARED, workspace=str(workspace))
        ex.state.attempts.append(record)
        pool.attempts.append(Attempt(ex, pool, record))
        pool.attempts[-1].start_from = source
    ex.save()
    slots = asyncio.Semaphore(ex.config.engine.attempt_boxes)
    pool.tasks = [asyncio.ensure_future(_attempt(a, node, loop, slots)) for a in pool.attempts]
    try:
        done = await asyncio.gather(*pool.tasks, return_exceptions=True)
    finally:
        for task in pool.tasks:
            task.cancel()
    down = next((e for e in done if isinstance(e, ProviderDown)), None)
    if down is not None:
        await _close_all(pool)
        raise down
    return await _choose(ex, pool, node, loop)


async def _snapshot_of_run_box(ex: Execution) -> PreparedRecord | None:
    """The run's box at its prepared point kept as a snapshot for its attempts to start
    from (its ``.git`` removed for it, then placed again from the host); None, with a
    note, where none can be taken."""
    box = await ex.box()
    layout = await asyncio.to_thread(layout_of, ex.workspace)
    if layout.repositories != [""]:
        return None  # submodules: each attempt's box gets the whole checkout
    conventions = ex.state.conventions
    excluded = in_checkout(dependency_paths(conventions)) if conventions is not None else []
    image = image_of(ex.box_spec(), ex.config)
    name = snapshot_name(ex.state.request.repo, ex.state.base, image, "attempts")
    await remove_in_box(box, [f"{WORKSPACE}/.git"], "the run's box's .git for its snapshot")
    try:
        info = await ex.engine.snapshot(box.id, name)
    except (UnsafeBoxOutput, SnapshotUnsupported) as exc:
        ex.note(f"the attempts start without a snapshot of the run's box: {exc.message}")
        return None
    finally:
        await place_git(box, ex.workspace, excluded=excluded)
    return PreparedRecord(
        tenant=ex.tenant,
        repo=ex.state.request.repo,
        branch=ex.state.base,
        commit=await ex.repo().head() or "",
        name=info.name,
        digest=info.digest,
        image=image,
        dependencies=ex.state.dependencies,
    )


async def _attempt(
    attempt: Attempt, node: AgentNode, loop: LoopNode, slots: asyncio.Semaphore
) -> None:
    record, number = attempt.record, attempt.record.number
    try:
        async with slots:
            await _work(attempt, node, loop)
    except (BudgetSpent, ProviderDown, asyncio.CancelledError) as stopped:
        if isinstance(stopped, BudgetSpent | ProviderDown):  # the others cannot go on either
            attempt.pool.stop(_stop_reason(stopped), but_this=True)
        why = attempt.stopped_for or attempt.pool.stopped or "the run was stopped"
        record.status, record.verdict = "stopped", f"stopped: {why}"
        attempt.parent.state.cost_usd += attempt.in_step  # its unfinished step's spending
        raise
    except GolemError as error:
        record.status, record.verdict = "failed", f"failed: {error.message}"
    finally:
        attempt.save()
        if record.status != "verified" or attempt.pool.stopped is not None:
            await _quietly(attempt.close())  # it cannot win: its box goes at once
        attempt.note(f"attempt {number}: {record.status} {record.verdict}".rstrip())


def _stop_reason(stopped: BudgetSpent | ProviderDown) -> str:
    if isinstance(stopped, ProviderDown):
        return f"the model provider is down ({stopped.reason}): the run pauses"
    return stopped.reason


async def _work(attempt: Attempt, node: AgentNode, loop: LoopNode) -> None:
    """The attempt's agent step and loop, in its own box; BudgetSpent when the run's
    budget has nothing left for it."""
    record, number = attempt.record, attempt.record.number
    if attempt.pool.stopped is not None:
        raise BudgetSpent(attempt.pool.stopped)
    await attempt.prepare()
    named = node.model_copy(update={"id": f"{node.id}-attempt{number}"})
    if await run_agent(attempt, named.id, named) is None:
        raise BudgetSpent("the run's budget is spent")
    attempt.loop = loop.model_copy(update={"id": f"{loop.id}-attempt{number}"})
    attempt.loop_outcome = await run_loop(attempt, attempt.loop)
    stat = await attempt.repo().worktree_diff_stat()
    record.diff_lines, record.diff_stat = stat.insertions + stat.deletions, stat.summary()
    record.status = "verified" if attempt.state.verified else "unverified"
    if record.status == "verified":
        attempt.pool.stop_hopeless()


async def _choose(
    ex: Execution, pool: _Pool, node: AgentNode, loop: LoopNode
) -> tuple[Literal["success", "failure"], str]:
    """The winner (or, with none verified, the best of the others), made the run's."""
    finished = [a for a in pool.attempts if a.record.status in ("verified", "unverified")]
    ranked = sorted(finished, key=lambda attempt: rank(attempt.record))
    for attempt in pool.attempts:
        ex.state.trajectories.extend(attempt.state.trajectories)
    if not ranked:
        why = pool.stopped or "every attempt failed"
        ex.state.unverified = f"no attempt finished: {why}"
        ex.state.attempts_concluded = (loop.id, "failure")
        ex.save()
        await _close_all(pool)
        return "failure", f"{len(pool.attempts)} attempts, none finished: {why}"
    judged = await judge_tie(ex, node, [Contender(a.record, a.repo()) for a in ranked])
    best = next((a for a in ranked if judged and a.record.number == judged.chosen), ranked[0])
    for attempt in pool.attempts:
        record = attempt.record
        if attempt is best:
            record.verdict = why_won(record, len(ranked), judged)
            if judged is not None and judged.chosen == record.number:
                record.judged = judged.reason
        elif record.status in ("verified", "unverified"):
            record.verdict = why_lost(record, best.record, judged)
            record.status = "lost"
    best.record.status = "won"
    await ex.adopt(best)
    state, chosen = ex.state, best.state
    state.checks, state.rounds, state.summary = chosen.checks, chosen.rounds, chosen.summary
    state.verified, state.unverified = chosen.verified, chosen.unverified
    state.attempts_concluded = (loop.id, best.loop_outcome)
    ex.save()
    await _close_all(pool)
    number = best.record.number
    return "success", f"attempt {number} of {len(pool.attempts)} chosen: {best.record.verdict}"


def _copy_checkout(source: Path, destination: Path) -> None:
    """The run's checkout copied for an attempt (symlinks kept as links, never followed)."""
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, destination, symlinks=True)


async def _close_all(pool: _Pool) -> None:
    for attempt in pool.attempts:
        await _quietly(attempt.close())


async def _quietly(work: object) -> None:
    with contextlib.suppress(Exception):  # removing a box that is gone already
        await work  # type: ignore[misc]
