"""Run control: cancel a run, answer its gate. Written once, for the CLI (``golem runs
cancel|approve|reject``) and the API (``POST /v1/runs/{id}/cancel|gate``) alike; resuming
is the runner's (``Runner.resume``).

A cancel is a request the run's runner acts on (it is woken at once, see
``golem.store.notify``); a run nobody runs yet (queued) or any more (its runner on this
host died) is ended here, with its ``run_end`` event, so that whoever follows the run's
events sees it end.
"""

from __future__ import annotations

from golem.blueprint.book import RunBook
from golem.blueprint.events import RunFinished
from golem.blueprint.lifecycle import mark_cancelled, orphaned
from golem.blueprint.state import RunState
from golem.core.errors import RunConflict, RunNotFound, RunTaken
from golem.sandbox import Engine
from golem.store import Decision

__all__ = ["cancel_run", "decide_gate", "load_run"]


async def load_run(book: RunBook, run_id: str) -> RunState:
    """A run, or RunNotFound."""
    state = await book.load(run_id)
    if state is None:
        raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
    return state


async def cancel_run(book: RunBook, run_id: str, *, engine: Engine | None = None) -> RunState:
    """Stop a run: queued or paused (its provider down), it never goes on; running, its
    runner stops and removes its box. With ``engine``, a run whose runner on this host is
    gone is ended here and that engine's leftover boxes are removed."""
    state = await load_run(book, run_id)
    if state.finished:
        raise RunConflict(f"run {run_id} has already ended ({state.status})")
    await book.store.runs.request_cancel(run_id)
    if state.status == "queued":
        stopped = state.model_copy(update={"cancel_requested": True})
        mark_cancelled(stopped, "cancelled before it started")
        if await book.store.queue.cancel_queued(run_id, stopped.model_dump_json()):
            await _ended(book, stopped)
    elif state.status == "waiting" and state.pause is not None and state.owner_pid is None:
        await _end_paused(book, state)
    elif engine is not None and orphaned(state):
        mark_cancelled(state, "cancelled on request")
        state.current = None
        await book.save(state)
        await _ended(book, state)
        await engine.prune()
    return await load_run(book, run_id)


async def decide_gate(book: RunBook, run_id: str, decision: Decision) -> RunState:
    """Answer the gate a run waits at (the first answer stands)."""
    state = await load_run(book, run_id)
    if state.status != "waiting" or state.gate is None:
        raise RunConflict(f"run {run_id} is not waiting at a gate ({state.status})")
    if state.gate.decision is not None or not await book.store.runs.decide_gate(run_id, decision):
        raise RunConflict(f"the gate of run {run_id} was answered already")
    return await load_run(book, run_id)


async def _end_paused(book: RunBook, state: RunState) -> None:
    """End a paused run (nobody runs it; it holds no box). Resumed meanwhile, it is its
    new runner's to end: the cancel request is in the store."""
    mark_cancelled(state, "cancelled on request")
    state.current = None
    try:
        await book.save(state)
    except RunTaken:
        return
    await _ended(book, state)


async def _ended(book: RunBook, state: RunState) -> None:
    await book.append(RunFinished(run_id=state.id, status="cancelled", summary=state.error or ""))
