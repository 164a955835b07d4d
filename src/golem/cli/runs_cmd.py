"""`golem runs ls|show|resume|cancel|approve|reject`: runs in golem's store."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from golem.blueprint.state import RunState
from golem.cli import options
from golem.cli.run_cmd import EXIT_CODES, run_with_progress
from golem.cli.run_progress import print_report
from golem.core.config import load_config
from golem.core.errors import InvalidRequest
from golem.sandbox import LocalEngine
from golem.sandbox.records import process_alive
from golem.service.store import SqlStore

__all__ = ["runs_app"]

runs_app = typer.Typer(help="Runs: list, show, resume, cancel, approve or reject.")


def _store() -> SqlStore:
    return SqlStore.open(load_config())


def _run(store: SqlStore, run_id: str) -> RunState:
    state = store.load_run(run_id)
    if state is None:
        raise InvalidRequest(f"no run {run_id!r}; see `golem runs ls`")
    return state


@runs_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Runs, newest first."""
    runs = _store().list_runs()
    if json_output:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in runs], indent=2))
        return
    if not runs:
        typer.echo("no runs")
        return
    table = Table("ID", "STATUS", "NODE", "TITLE", "COST", "AGE", box=None)
    now = time.time()
    for run in runs:
        age = int(now - run.created)
        table.add_row(
            run.id, run.status, run.current or "-", escape(run.title[:50]),
            f"${run.cost_usd:.4f}", f"{age // 3600}h{age % 3600 // 60:02d}m",
        )  # fmt: skip
    Console().print(table)


@runs_app.command("show")
def show_command(
    run_id: str = typer.Argument(...),
    events: bool = typer.Option(False, "--events", help="Every event of the run."),
    json_output: bool = typer.Option(False, "--json", help="Print the state as JSON."),
) -> None:
    """One run: its state, steps and report."""
    store = _store()
    state = _run(store, run_id)
    if json_output:
        typer.echo(state.model_dump_json(indent=2))
        return
    console = Console()
    console.print(f"[bold]{state.id}[/] {escape(state.title)} · {state.status}")
    console.print(f"repo: {escape(state.request.repo)} · branch: {state.branch or '-'}")
    for step in state.steps:
        console.print(
            f"  {step.node:<12} {step.outcome:<9} {step.ended - step.started:6.1f}s  "
            f"{escape(step.detail)}",
            highlight=False,
        )
    if state.current and not state.finished:
        console.print(f"  next: {state.current}")
    if events:
        for seq, event in store.events(run_id):
            console.print(f"[dim]{seq:>4} {event.type}[/] {escape(event.model_dump_json())[:200]}")
    print_report(console, state)


@runs_app.command("resume")
def resume_command(
    run_id: str = typer.Argument(...), config_file: Path | None = options.CONFIG
) -> None:
    """Go on with a run whose runner died (its box is removed; the node that was running
    starts again from the checkout's last saved state)."""
    config = options.BoxFlags(
        None, None, None, None, None, None, None, None, None, None, config_file
    ).load()
    state = run_with_progress(config, lambda runner: runner.resume(run_id))
    raise typer.Exit(EXIT_CODES.get(state.status, 1))


@runs_app.command("cancel")
def cancel_command(run_id: str = typer.Argument(...)) -> None:
    """Stop a run: its runner stops at once and removes its box."""
    store = _store()
    state = _run(store, run_id)
    if state.finished:
        raise InvalidRequest(f"run {run_id} has already ended ({state.status})")
    store.request_cancel(run_id)
    if state.owner_pid is None or not process_alive(state.owner_pid, state.owner_start):
        state.status = "cancelled"  # nobody runs it: cancel it here, and remove its box
        state.error = "cancelled on request"
        state.current = None
        store.save_run(state)
        asyncio.run(_prune())
    typer.echo(f"cancel requested for {run_id}")


async def _prune() -> None:
    async with LocalEngine(load_config()) as engine:
        await engine.prune()


def _decide(run_id: str, decision: str) -> None:
    store = _store()
    state = _run(store, run_id)
    if state.status != "waiting" or state.gate is None:
        raise InvalidRequest(f"run {run_id} is not waiting at a gate ({state.status})")
    if not store.decide_gate(run_id, decision):  # type: ignore[arg-type]
        raise InvalidRequest(f"the gate of run {run_id} was answered already")
    typer.echo(f"{run_id}: gate {state.gate.node} {decision}")


@runs_app.command("approve")
def approve_command(run_id: str = typer.Argument(...)) -> None:
    """Approve the gate a run waits at."""
    _decide(run_id, "approved")


@runs_app.command("reject")
def reject_command(run_id: str = typer.Argument(...)) -> None:
    """Reject the gate a run waits at."""
    _decide(run_id, "rejected")
