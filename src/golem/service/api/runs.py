"""Runs over HTTP: submit, list, show, cancel, answer a gate, follow the events; and the
pull requests the local forge opened. Everything is the caller's tenant's only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Path, Query, status
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.control import cancel_run as cancel
from golem.blueprint.control import decide_gate as decide
from golem.blueprint.control import load_run
from golem.blueprint.loader import BUILTINS
from golem.core.errors import GolemError, Problem
from golem.core.isolation import IsolationTier
from golem.core.network import RemotePolicy
from golem.forge import LocalForge, PullRequest
from golem.service.api.deps import Caller, State
from golem.service.api.streams import Frame, problem_frame
from golem.service.forge_names import check_run_names
from golem.service.keys import Principal
from golem.service.policy import check_repo, check_run
from golem.service.state import ServerState
from golem.service.trust import check_tier, floor_for, tier_for

__all__ = [
    "GateDecision",
    "admit",
    "events_over",
    "pull_request",
    "router",
    "run_book",
    "submit",
]

router = APIRouter(prefix="/v1", tags=["runs"])
MAX_INT = 2**31 - 1  # the database's integer


class GateDecision(BaseModel):
    """A person's answer to the gate a run waits at."""

    decision: Literal["approved", "rejected"]


def run_book(state: ServerState, principal: Principal) -> RunBook:
    """The runs of the principal's tenant."""
    return RunBook(state.store.for_tenant(principal.tenant))


def _forge(state: ServerState, principal: Principal) -> LocalForge:
    return LocalForge(state.store.for_tenant(principal.tenant))


async def submit(state: ServerState, principal: Principal, request: RunRequest) -> RunState:
    """Queue a run for the principal's tenant, once the key's policy allows it (the REST
    API and the MCP server alike), in the isolation tier the trust policy gives it, with a
    container engine for checks that need one when the key's role may have one."""
    remote_policy, tier = await admit(state, principal, request)
    policy = state.config.server.policies[principal.role]
    return await state.queue.submit(
        request,
        principal.tenant,
        role=principal.role,
        remote_policy=remote_policy,
        tier=tier,
        containers=policy.containers,
    )


async def admit(
    state: ServerState, principal: Principal, request: RunRequest
) -> tuple[RemotePolicy | None, IsolationTier | None]:
    """Refuse ``request`` unless the key's policy allows it (its names, its server files,
    its tier, its repository's reach); the remote policy and the tier its run gets."""
    config = state.config
    policy = config.server.policies[principal.role]
    default_forge = config.forge.provider
    check_run_names(request, request.forge or default_forge)
    check_run(request, policy, principal.role, BUILTINS, default_forge=default_forge)
    floor = floor_for(config, tenant=principal.tenant, role=principal.role, repo=request.repo)
    check_tier(request.tier, floor, f"this key's role ({principal.role})")
    if policy.repos is not None:
        await check_repo(request.repo, policy.repos, principal.role, config.engine.network)
    return policy.repos, tier_for(request.tier, floor, config.engine.default_tier)


async def pull_request(
    state: ServerState, principal: Principal, repo: str, number: int
) -> PullRequest:
    """One pull request the local forge opened for the principal's tenant (404 otherwise)."""
    pr = await _forge(state, principal).pull_request(repo, number)
    if pr is None:
        raise Problem(404, f"no pull request #{number} in {repo!r}")
    return pr


@router.post("/runs", status_code=status.HTTP_202_ACCEPTED)
async def submit_run(request: RunRequest, principal: Caller, state: State) -> RunState:
    """Queue a run: a blueprint on a repository, for a task or an issue."""
    return await submit(state, principal, request)


@router.get("/runs")
async def list_runs(
    principal: Caller, state: State, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> list[RunState]:
    """This tenant's runs, newest first."""
    return await run_book(state, principal).newest(limit)


@router.get("/runs/{run_id}")
async def get_run(run_id: str, principal: Caller, state: State) -> RunState:
    """One run."""
    return await load_run(run_book(state, principal), run_id)


@router.post("/runs/{run_id}/cancel")
async def cancel_run(run_id: str, principal: Caller, state: State) -> RunState:
    """Stop a run: queued, it never starts; running, its runner stops and removes its box."""
    return await cancel(run_book(state, principal), run_id)


@router.post("/runs/{run_id}/gate")
async def decide_gate(run_id: str, body: GateDecision, principal: Caller, state: State) -> RunState:
    """Approve or reject the gate a run waits at."""
    return await decide(run_book(state, principal), run_id, body.decision)


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
    book = run_book(state, principal)
    await load_run(book, run_id)
    start = last_event_id if last_event_id is not None else after
    return EventSourceResponse(_events(book, run_id, start))


async def _events(book: RunBook, run_id: str, seen: int) -> AsyncIterator[Frame]:
    """The run's events from ``seen`` on, live; a failure (the store away) ends the stream
    with ``event: problem`` (reconnect with Last-Event-ID to go on)."""
    try:
        async for event in _live(book, run_id, seen):
            yield event
    except GolemError as exc:
        yield problem_frame(exc)


async def _live(book: RunBook, run_id: str, seen: int) -> AsyncIterator[dict[str, str]]:
    """The run's events from ``seen`` on; woken by the store when the run changes."""
    with book.watch(run_id) as changed:
        while True:
            changed.clear()
            for seq, event in await book.events(run_id, after=seen):
                seen = seq
                yield {"id": str(seq), "event": event.type, "data": event.model_dump_json()}
                if event.type == "run_end":
                    return
            current = await book.load(run_id)
            if current is None or (current.finished and await events_over(book, run_id, seen)):
                return
            # A run saves its end before it writes its run_end (a run that failed or was
            # cancelled before it started has no event before it): wait for that.
            if not await changed.wait() and current.finished:
                return


async def events_over(book: RunBook, run_id: str, seen: int) -> bool:
    """Whether an ended run's stream is over at ``seen``: its run_end was the last one
    read (a client reconnecting after the end; retention keeps a run's run_end)."""
    around = await book.events(run_id, after=max(seen - 1, 0))
    return bool(around) and around[-1][0] == seen and around[-1][1].type == "run_end"


@router.get("/prs", tags=["pull requests"])
async def list_pull_requests(
    principal: Caller, state: State, repo: Annotated[str | None, Query()] = None
) -> list[PullRequest]:
    """Pull requests the local forge opened for this tenant, newest first."""
    return await _forge(state, principal).pull_requests(repo)


@router.get("/prs/{number}", tags=["pull requests"])
async def get_pull_request(
    number: Annotated[int, Path(ge=1, le=MAX_INT)],
    principal: Caller,
    state: State,
    repo: Annotated[str, Query(min_length=1)],
) -> PullRequest:
    """One pull request of a repository."""
    return await pull_request(state, principal, repo, number)
