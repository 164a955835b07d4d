"""`golem runs ls|show|resume|cancel|approve|reject`: runs in golem's store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer

from golem.cli import options

if TYPE_CHECKING:
    from golem.blueprint.events import RunEvent
    from golem.blueprint.state import RunState
    from golem.core.console import GolemConsole
    from golem.store import RunRecord, Store

__all__ = ["runs_app"]

LISTED = 50
"""How many of the newest runs `golem runs ls` lists."""
FOLLOW_UPS_SCANNED = 200
"""How many of the newest runs `golem runs show` looks through for a run's follow-ups."""

runs_app = typer.Typer(
    rich_markup_mode=None, help="Runs: list, show, resume, cancel, approve or reject."
)


async def _with_events(
    store: Store, run_id: str, events: bool
) -> tuple[RunState, list[tuple[int, RunEvent]]]:
    from golem.blueprint.book import RunBook
    from golem.blueprint.control import load_run

    book = RunBook(store)
    state = await load_run(book, run_id)
    return state, (await book.events(run_id) if events else [])


@runs_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Runs, newest first."""
    from golem.cli.stores import using_store
    from golem.core.config import load_config

    if json_output:
        from golem.blueprint.book import RunBook
        from golem.core.console import say_json

        runs = using_store(load_config(), lambda store: RunBook(store).newest())
        say_json([r.model_dump(mode="json") for r in runs])
        return
    records = using_store(load_config(), lambda store: store.runs.newest(LISTED))
    if not records:
        typer.echo("no runs")
        return
    _print_listing(records)


def _print_listing(records: list[RunRecord]) -> None:
    """The table of `golem runs ls`, read from the records as kept (the run's document as
    JSON, its columns winning): the blueprint layer's models, which validating a RunState
    imports (agent, forge, context), are not needed to list runs."""
    from rich.table import Table

    from golem.core.console import terminal

    table = Table("ID", "STATUS", "NODE", "TITLE", "COST", "AGE", box=None)
    now = time.time()
    for record in records:
        run = json.loads(record.document)
        age = int(now - record.created)
        table.add_row(
            record.id,
            record.status,
            run.get("current") or "-",
            str(run.get("title", ""))[:50],
            f"${float(run.get('cost_usd', 0.0)):.4f}",
            f"{age // 3600}h{age % 3600 // 60:02d}m",
        )
    terminal().print(table)


@runs_app.command("show")
def show_command(
    run_id: str = typer.Argument(...),
    events: bool = typer.Option(False, "--events", help="Every event of the run."),
    json_output: bool = typer.Option(False, "--json", help="Print the state as JSON."),
) -> None:
    """One run: its state, steps and report."""
    from golem.cli.run_progress import print_report
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.core.console import markup, say_json, terminal

    state, kept = using_store(load_config(), lambda store: _with_events(store, run_id, events))
    if json_output:
        say_json(state)
        return
    out = terminal()
    out.print(markup("[bold]{}[/] {} · {}", state.id, state.title, state.status))
    out.print(f"repo: {state.request.repo} · branch: {state.branch or '-'}")
    out.print(f"isolation: {_isolation(state)}", highlight=False)
    started = state.started_from
    out.print(f"started from: {started.describe() if started else 'none'}", highlight=False)
    _print_links(out, state, using_store(load_config(), lambda s: _follow_ups(s, state.id)))
    for step in state.steps:
        cost = f"${step.cost_usd:.4f}" if step.cost_usd else ""
        out.print(
            f"  {step.node:<12} {step.outcome:<9} {step.ended - step.started:6.1f}s "
            f"{cost:>8}  {step.detail}",
            highlight=False,
        )
    if state.current and not state.finished:
        out.print(f"  next: {state.current}")
    if state.pause is not None and not state.finished:
        resumes = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.pause.resume_at))
        out.print(
            markup(
                "  [yellow]paused[/] at {} (pause {} in a row), resumes by itself at {}: {}",
                state.pause.node,
                state.pause.count,
                resumes,
                state.pause.reason,
            ),
            highlight=False,
        )
    if events:
        for seq, event in kept:
            out.print(markup("[dim]{:>4} {}[/] {}", seq, event.type, event.model_dump_json()[:200]))
    print_report(out, state)


def _isolation(state: RunState) -> str:
    """What isolation the run's box got, or the tier it waits for (none yet)."""
    if state.isolation is not None:
        return str(state.isolation)
    return f"{state.tier or 'the default tier'} (no box yet)"


async def _follow_ups(store: Store, run_id: str) -> list[RunState]:
    """The follow-up runs of ``run_id`` among the newest runs, oldest first."""
    from golem.blueprint.book import RunBook

    newest = await RunBook(store).newest(FOLLOW_UPS_SCANNED)
    return [
        run
        for run in reversed(newest)
        if run.request.follow_up is not None and run.request.follow_up.parent_run == run_id
    ]


def _print_links(console: GolemConsole, state: RunState, follow_ups: list[RunState]) -> None:
    """The run a follow-up follows (and on which pull request), and a run's follow-ups."""

    follow = state.request.follow_up
    if follow is not None:
        where = state.pr.url if state.pr is not None else f"{follow.repo}#{follow.number}"
        parent = follow.parent_run or "a run not known here"
        console.print(f"follow-up of {parent} on {where}", highlight=False)
    for run in follow_ups:
        console.print(f"follow-up: {run.id} · {run.status} · ${run.cost_usd:.4f}", highlight=False)


@runs_app.command("resume")
def resume_command(
    run_id: str = typer.Argument(...), config_file: Path | None = options.CONFIG
) -> None:
    """Go on with a run whose runner died, or that failed for its forge credentials once
    they are fixed (its box is removed; the node that was running starts again from the
    checkout's last saved state)."""
    from golem.cli.run_cmd import EXIT_CODES, run_with_progress

    config = options.BoxFlags(
        None, None, None, None, None, None, None, None, None, None, config_file
    ).load()
    state = run_with_progress(config, lambda runner: runner.resume(run_id))
    raise typer.Exit(EXIT_CODES.get(state.status, 1))


@runs_app.command("cancel")
def cancel_command(run_id: str = typer.Argument(...)) -> None:
    """Stop a run: its runner stops at once and removes its box (a run nobody runs any
    more is ended here, and this host's leftover boxes removed)."""
    from golem.blueprint.book import RunBook
    from golem.blueprint.control import cancel_run
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.core.console import say
    from golem.sandbox import make_engine

    config = load_config()

    async def cancel(store: Store) -> RunState:
        async with make_engine(config) as engine:
            return await cancel_run(RunBook(store), run_id, engine=engine)

    using_store(config, cancel)
    say(f"cancel requested for {run_id}")


def _decide(run_id: str, decision: Literal["approved", "rejected"]) -> None:
    from golem.blueprint.book import RunBook
    from golem.blueprint.control import decide_gate, load_run
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.core.console import say

    async def decide(store: Store) -> str:
        book = RunBook(store)
        asked = (await load_run(book, run_id)).gate
        await decide_gate(book, run_id, decision)
        return asked.node if asked is not None else "?"

    node = using_store(load_config(), decide)
    say(f"{run_id}: gate {node} {decision}")


@runs_app.command("approve")
def approve_command(run_id: str = typer.Argument(...)) -> None:
    """Approve the gate a run waits at."""
    _decide(run_id, "approved")


@runs_app.command("reject")
def reject_command(run_id: str = typer.Argument(...)) -> None:
    """Reject the gate a run waits at."""
    _decide(run_id, "rejected")
