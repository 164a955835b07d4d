"""The run tools: start a run, follow its status and events, answer its gate, fetch its
pull request, list and cancel runs. Each calls what the run routes call."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.control import cancel_run, decide_gate, load_run
from golem.core.errors import Problem
from golem.forge import PullRequest
from golem.service.api.runs import events_over, pull_request, run_book, submit
from golem.service.mcp.host import acting, tool

__all__ = ["MAX_PAGE_BYTES", "RUN_TOOLS", "bounded_page"]

MAX_EVENTS = 500
MAX_PAGE_BYTES = 256 * 1024  # of events' JSON in one run_events answer
MAX_WAIT = 60.0  # seconds a run_events call may wait for the next event


class RunSummary(BaseModel):
    """A run as the tools show it (its whole record is GET /v1/runs/{id})."""

    run_id: str
    status: str
    finished: bool
    title: str
    blueprint: str
    current: str | None = Field(description="The node running (or next).")
    waiting_at_gate: str | None = Field(description="The gate's message, when it waits.")
    paused: str | None = Field(
        None,
        description="Why the run is paused (its model provider down) and when it resumes "
        "by itself, when it is.",
    )
    error: str | None
    pr_url: str | None
    pr_number: int | None
    cost_usd: float
    tier: str | None = Field(None, description="The isolation tier its boxes need.")
    isolation: str | None = Field(None, description="What isolation its box got.")

    @classmethod
    def of(cls, run: RunState) -> RunSummary:
        """The summary of a run."""
        gate = run.gate
        waiting = gate.message if run.status == "waiting" and gate is not None else None
        pause = run.pause if run.status == "waiting" else None
        paused = None
        if pause is not None:
            resumes = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(pause.resume_at))
            paused = f"at {pause.node}, resumes by itself at {resumes}: {pause.reason}"
        return cls(
            run_id=run.id,
            status=run.status,
            finished=run.finished,
            title=run.title,
            blueprint=run.blueprint,
            current=run.current,
            waiting_at_gate=waiting,
            paused=paused,
            error=run.error,
            pr_url=run.pr.url if run.pr else None,
            tier=run.tier,
            isolation=str(run.isolation) if run.isolation is not None else None,
            pr_number=run.pr.number if run.pr else None,
            cost_usd=run.cost_usd,
        )


class RunEvent(BaseModel):
    """One event of a run: ``seq`` is its number in the run (the cursor)."""

    seq: int
    type: str
    data: dict[str, Any]


class EventPage(BaseModel):
    """Events after a cursor; call again with ``after=next_after`` for the next ones,
    until ``ended``."""

    events: list[RunEvent]
    next_after: int
    ended: bool = Field(description="The run's last event (run_end) has been read.")
    run: RunSummary


@tool
async def run_start(ctx: Context, run: RunRequest) -> RunSummary:
    """Start a run: a blueprint on a repository for a task or an issue, ending in a pull
    request (the fields POST /v1/runs takes: repo, task or issue, blueprint, model, ...)."""
    state, principal = acting(ctx)
    return RunSummary.of(await submit(state, principal, run))


@tool
async def run_status(ctx: Context, run_id: str) -> RunSummary:
    """A run's status: where it is, whether it waits at a gate, its pull request."""
    state, principal = acting(ctx)
    return RunSummary.of(await load_run(run_book(state, principal), run_id))


@tool
async def run_events(
    ctx: Context,
    run_id: str,
    after: Annotated[int, Field(ge=0, description="The last seq already read (0: none).")] = 0,
    limit: Annotated[int, Field(ge=1, le=MAX_EVENTS)] = 100,
    wait: Annotated[
        float, Field(ge=0, le=MAX_WAIT, description="Seconds to wait for a new event.")
    ] = 0,
) -> EventPage:
    """A run's events after the cursor ``after`` (at most ``limit``, and 256 KiB); with
    ``wait``, waits that long for the next one when there is none yet and the run goes on."""
    state, principal = acting(ctx)
    book = run_book(state, principal)
    events, run = await _events_after(book, run_id, after, wait)
    page = bounded_page(events[:limit])
    ended = (
        page[-1].type == "run_end"
        if page
        else run.finished and await events_over(book, run_id, after)
    )
    cursor = page[-1].seq if page else after
    return EventPage(events=page, next_after=cursor, ended=ended, run=RunSummary.of(run))


def bounded_page(events: list[tuple[int, Any]]) -> list[RunEvent]:
    """The events, up to ``MAX_PAGE_BYTES`` of JSON (always the first): a client's context
    takes what a page holds."""
    page: list[RunEvent] = []
    size = 0
    for seq, event in events:
        size += len(event.model_dump_json())
        if page and size > MAX_PAGE_BYTES:
            break
        page.append(RunEvent(seq=seq, type=event.type, data=event.model_dump(mode="json")))
    return page


async def _events_after(
    book: RunBook, run_id: str, after: int, wait: float
) -> tuple[list[tuple[int, Any]], RunState]:
    """The events after ``after`` and the run, waiting at most ``wait`` seconds for one
    (woken by the store, never polled; a run saves its end before its run_end)."""
    deadline = asyncio.get_running_loop().time() + wait
    with book.watch(run_id) as changed:
        while True:
            changed.clear()
            run = await load_run(book, run_id)
            events = await book.events(run_id, after=after)
            remaining = deadline - asyncio.get_running_loop().time()
            if events or remaining <= 0:
                return events, run
            if run.finished and await events_over(book, run_id, after):
                return events, run
            await changed.wait(remaining)


@tool
async def run_approve(ctx: Context, run_id: str) -> RunSummary:
    """Approve the gate a run waits at (the first answer stands)."""
    return await _decide(ctx, run_id, "approved")


@tool
async def run_reject(ctx: Context, run_id: str) -> RunSummary:
    """Reject the gate a run waits at (the first answer stands)."""
    return await _decide(ctx, run_id, "rejected")


async def _decide(
    ctx: Context, run_id: str, decision: Literal["approved", "rejected"]
) -> RunSummary:
    state, principal = acting(ctx)
    return RunSummary.of(await decide_gate(run_book(state, principal), run_id, decision))


@tool
async def run_pr(ctx: Context, run_id: str) -> PullRequest:
    """The pull request a run opened: url, number, title, draft, and (local forge) its diff."""
    state, principal = acting(ctx)
    run = await load_run(run_book(state, principal), run_id)
    if run.pr is None:
        raise Problem(404, f"run {run_id} has opened no pull request ({run.status}) yet")
    if run.pr.provider != "local":
        return run.pr
    return await pull_request(state, principal, run.pr.repo, run.pr.number)


@tool
async def run_list(
    ctx: Context, limit: Annotated[int, Field(ge=1, le=500)] = 20
) -> list[RunSummary]:
    """This tenant's runs, newest first."""
    state, principal = acting(ctx)
    return [RunSummary.of(run) for run in await run_book(state, principal).newest(limit)]


@tool
async def run_cancel(ctx: Context, run_id: str) -> RunSummary:
    """Stop a run: queued, it never starts; running, it stops and its box is removed."""
    state, principal = acting(ctx)
    return RunSummary.of(await cancel_run(run_book(state, principal), run_id))


RUN_TOOLS = (
    run_start,
    run_status,
    run_events,
    run_approve,
    run_reject,
    run_pr,
    run_list,
    run_cancel,
)
