"""Runs over HTTP: submit, list, show, cancel, answer a gate, follow the events; and the
pull requests the local forge opened. Everything is the caller's tenant's only."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Path, Query, status
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from golem.blueprint import RunRequest, RunState
from golem.blueprint.events import RunFinished
from golem.blueprint.loader import BUILTINS
from golem.core.errors import Problem
from golem.forge import PullRequest
from golem.service.api.deps import Caller, State
from golem.service.keys import Principal
from golem.service.policy import check_repo, check_run
from golem.service.state import ServerState
from golem.service.store import SqlStore

__all__ = ["GateDecision", "router"]

router = APIRouter(prefix="/v1", tags=["runs"])
FOLLOW_POLL = 1.0
MAX_INT = 2**31 - 1  # the database's integer


class GateDecision(BaseModel):
    """A person's answer to the gate a run waits at."""

    decision: Literal["approved", "rejected"]


def _store(state: ServerState, principal: Principal) -> SqlStore:
    return state.store.for_tenant(principal.tenant)


def _run(store: SqlStore, run_id: str) -> RunState:
    run = store.load_run(run_id)
    if run is None:
        raise Problem(404, f"no run {run_id!r}")
    return run


@router.post("/runs", status_code=status.HTTP_202_ACCEPTED)
async def submit_run(request: RunRequest, principal: Caller, state: State) -> RunState:
    """Queue a run: a blueprint on a repository, for a task or an issue."""
    policy = state.config.server.policies[principal.role]
    default_forge = state.config.forge.provider
    check_run(request, policy, principal.role, BUILTINS, default_forge=default_forge)
    if policy.repos is not None:
        await check_repo(request.repo, policy.repos, principal.role, state.config.engine.network)
    return state.queue.submit(request, principal.tenant, remote_policy=policy.repos)


@router.get("/runs")
async def list_runs(
    principal: Caller, state: State, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[RunState]:
    """This tenant's runs, newest first."""
    return _store(state, principal).list_runs(limit)


@router.get("/runs/{run_id}")
async def get_run(run_id: str, principal: Caller, state: State) -> RunState:
    """One run."""
    return _run(_store(state, principal), run_id)


@router.post("/runs/{run_id}/cancel")
async def cancel_run(run_id: str, principal: Caller, state: State) -> RunState:
    """Stop a run: queued, it never starts; running, its runner stops and removes its box."""
    store = _store(state, principal)
    run = _run(store, run_id)
    if run.finished:
        raise Problem(409, f"run {run_id} has already ended ({run.status})")
    store.request_cancel(run_id)
    if run.status == "queued" and (cancelled := store.cancel_queued(run_id)) is not None:
        store.append_event(
            run_id,
            RunFinished(run_id=run_id, status="cancelled", summary=cancelled.error or ""),
        )
    return _run(store, run_id)


@router.post("/runs/{run_id}/gate")
async def decide_gate(run_id: str, body: GateDecision, principal: Caller, state: State) -> RunState:
    """Approve or reject the gate a run waits at."""
    store = _store(state, principal)
    run = _run(store, run_id)
    if run.status != "waiting" or run.gate is None:
        raise Problem(409, f"run {run_id} is not waiting at a gate ({run.status})")
    if run.gate.decision is not None or not store.decide_gate(run_id, body.decision):
        raise Problem(409, f"the gate of run {run_id} was answered already")
    return _run(store, run_id)


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def follow_run(
    run_id: str,
    principal: Caller,
    state: State,
    after: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
    last_event_id: Annotated[int | None, Header(ge=0, le=MAX_INT)] = None,
) -> EventSourceResponse:
    """The run's events as server-sent events (id: its number in the run), live until the
    run ends; reconnect with Last-Event-ID (or ``after``) to go on where you left."""
    store = _store(state, principal)
    _run(store, run_id)
    start = last_event_id if last_event_id is not None else after
    return EventSourceResponse(_events(state, store, run_id, start))


async def _events(
    state: ServerState, store: SqlStore, run_id: str, seen: int
) -> AsyncIterator[dict[str, str]]:
    quiet = 0  # polls that found the run over and nothing new
    with state.queue.hub.watch(run_id) as changed:
        while True:
            changed.clear()
            for seq, event in store.events(run_id, after=seen):
                seen, quiet = seq, 0
                yield {"id": str(seq), "event": event.type, "data": event.model_dump_json()}
                if event.type == "run_end":
                    return
            current = store.load_run(run_id)
            if current is None:
                return
            if current.finished:
                quiet += 1
                if quiet > 1:  # over, and its run_end is not coming (cancelled while queued)
                    return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), FOLLOW_POLL)


@router.get("/prs", tags=["pull requests"])
async def list_pull_requests(
    principal: Caller, state: State, repo: Annotated[str | None, Query()] = None
) -> list[PullRequest]:
    """Pull requests the local forge opened for this tenant, newest first."""
    return _store(state, principal).list_pull_requests(repo)


@router.get("/prs/{number}", tags=["pull requests"])
async def get_pull_request(
    number: Annotated[int, Path(ge=1, le=MAX_INT)],
    principal: Caller,
    state: State,
    repo: Annotated[str, Query(min_length=1)],
) -> PullRequest:
    """One pull request of a repository."""
    pr = _store(state, principal).get_pull_request(repo, number)
    if pr is None:
        raise Problem(404, f"no pull request #{number} in {repo!r}")
    return pr
