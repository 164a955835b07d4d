"""Goal loops over HTTP: start one, list, show, pause, resume, stop. A loop's runs are the
caller's tenant's, each admitted as ``POST /v1/runs`` admits a run (the key's policy, the
trust policy's tier); the server drives the loop (``golem.service.loops``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, status

from golem.core.errors import Problem
from golem.service.api.deps import Caller, State
from golem.service.api.runs import admit
from golem.service.documents import Shelf
from golem.service.keys import Principal
from golem.service.loops import (
    GoalLoop,
    GoalLoops,
    LoopRequest,
    loop_shelf,
    move_loop,
    new_loop,
    stop_loop,
)
from golem.service.loops.model import LoopStatus
from golem.service.loops.runs import iteration_request
from golem.service.state import ServerState

__all__ = ["router"]


@asynccontextmanager
async def _driving(app: FastAPI) -> AsyncIterator[None]:
    loops = GoalLoops(app.state.golem)
    app.state.loops = loops
    loops.start()
    try:
        yield
    finally:
        await loops.close()


router = APIRouter(prefix="/v1/loops", tags=["loops"], lifespan=_driving)


def _shelf(state: ServerState, principal: Principal) -> Shelf[GoalLoop]:
    return loop_shelf(state).for_tenant(principal.tenant)


async def _loop(state: ServerState, principal: Principal, loop_id: str) -> GoalLoop:
    kept = await _shelf(state, principal).load(loop_id)
    if kept is None:
        raise Problem(404, f"no goal loop {loop_id!r}; see GET /v1/loops")
    return kept.model


@router.post("", status_code=status.HTTP_202_ACCEPTED)
async def start_loop(request: LoopRequest, principal: Caller, state: State) -> GoalLoop:
    """Start a goal loop: runs on one branch, each from the last one's result, until
    ``until`` exits 0 in the box, the budget is spent, ``max_iterations`` ran, or two
    iterations in a row make no progress on it."""
    loop = new_loop(principal.tenant, principal.role, request)
    first = iteration_request(loop, 1)
    await admit(state, principal, first)
    later = first.model_copy(update={"blueprint": request.follow_up_blueprint})
    await admit(state, principal, later)
    await _shelf(state, principal).create(loop.id, loop)
    return loop


@router.get("")
async def list_loops(principal: Caller, state: State) -> list[GoalLoop]:
    """This tenant's goal loops, newest first."""
    kept = await _shelf(state, principal).all()
    return [one.model for one in reversed(kept)]


@router.get("/{loop_id}")
async def get_loop(loop_id: str, principal: Caller, state: State) -> GoalLoop:
    """One goal loop, with its iterations."""
    return await _loop(state, principal, loop_id)


@router.post("/{loop_id}/pause")
async def pause_loop(loop_id: str, principal: Caller, state: State) -> GoalLoop:
    """Start no next iteration (the one in progress ends as it would)."""
    return await _move(state, principal, loop_id, "active", "paused")


@router.post("/{loop_id}/resume")
async def resume_loop(loop_id: str, principal: Caller, state: State) -> GoalLoop:
    """Go on with a paused loop."""
    return await _move(state, principal, loop_id, "paused", "active")


@router.post("/{loop_id}/stop")
async def stop(loop_id: str, principal: Caller, state: State) -> GoalLoop:
    """End the loop: nothing more starts, its run in progress is cancelled."""
    loop = await _loop(state, principal, loop_id)
    if loop.ended:
        raise Problem(409, f"goal loop {loop_id} has ended already ({loop.status})")
    return await stop_loop(state.store, loop, f"key {principal.key_id}") or loop


async def _move(
    state: ServerState, principal: Principal, loop_id: str, old: str, new: LoopStatus
) -> GoalLoop:
    loop = await _loop(state, principal, loop_id)
    if loop.status != old:
        raise Problem(409, f"goal loop {loop_id} is {loop.status}, not {old}")
    why = "" if new == "active" else f"paused by key {principal.key_id}"
    after = await _shelf(state, principal).change(loop_id, move_loop(old, new, why))
    if after is None or after.status != new:
        raise Problem(409, f"goal loop {loop_id} changed meanwhile; look at it again")
    return after
