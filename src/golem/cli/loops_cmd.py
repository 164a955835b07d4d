"""`golem loop` (start a goal loop) and `golem loops ls|show|pause|resume|stop`: goal loops
in golem's store. A `golem serve` on the same store drives them (any server sharing it)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.core.console import GolemConsole, markup, say, say_json, terminal
from golem.core.errors import InvalidRequest, RunConflict

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.service.documents import Kept, Shelf
    from golem.service.loops import GoalLoop
    from golem.store import Store

__all__ = ["loop_command", "loops_app"]

loops_app = typer.Typer(
    rich_markup_mode=None, help="Goal loops: list, show, pause, resume or stop."
)
ENDED_CODES = {"complete": 0, "stopped": 1, "budget-limited": 3}


def _shelf(store: Store) -> Shelf[GoalLoop]:
    from golem.service.documents import Shelf
    from golem.service.loops import KIND, GoalLoop

    return Shelf(store, KIND, GoalLoop)


def loop_command(
    repo: str = typer.Option(..., "--repo", help="A git URL or a local repository path."),
    goal: str = typer.Option(..., "--goal", help="The goal, in words."),
    until: str = typer.Option(
        ..., "--until", help="A command run in the box; its exit 0 says the goal holds."
    ),
    max_iterations: int = typer.Option(5, "--max-iterations", help="Runs at most."),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="Dollars for the loop."),
    model: str | None = typer.Option(None, "--model", help="provider/model or scripted:PATH."),
    blueprint: str = typer.Option("minion", "--blueprint", help="The first run's blueprint."),
    tenant: str = typer.Option("default", "--tenant", help="The tenant its runs belong to."),
    wait: bool = typer.Option(False, "--wait", help="Stay until the loop ends."),
) -> None:
    """Start a goal loop: runs on one branch, each from the last one's result, until the
    --until command passes in the box, the budget is spent, or two runs in a row make no
    progress on it. A golem serve on this store drives it."""
    from pydantic import ValidationError

    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.service.loops import LoopRequest, new_loop

    path = Path(repo)
    fields = {
        "repo": str(path.resolve()) if path.exists() else repo,
        "goal": goal,
        "until": until,
        "max_iterations": max_iterations,
        "budget_usd": budget_usd,
        "model": model,
        "blueprint": blueprint,
    }
    try:
        request = LoopRequest.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]).replace("_", "-")
        raise InvalidRequest(f"--{where}: {error['msg']}") from None
    loop = new_loop(tenant, None, request)
    config = load_config()
    using_store(config, lambda store: _shelf(store).create(loop.id, loop), tenant=tenant)
    say(f"{loop.id}: started; a golem serve on this store drives it")
    say(f"  golem loops show {loop.id}")
    if wait:
        ended = asyncio.run(_wait(config, loop.id, tenant))
        _print_loop(terminal(), ended)
        raise typer.Exit(ENDED_CODES.get(ended.status, 1))


async def _wait(config: GolemConfig, loop_id: str, tenant: str) -> GoalLoop:
    """The loop once it ends, woken by the store as the server changes it."""
    from golem.store import SqlStore

    store = await SqlStore.open(config, tenant=tenant)
    shelf = _shelf(store)
    seen = 0
    try:
        with shelf.watch() as changed:
            while True:
                changed.clear()
                kept = await shelf.load(loop_id)
                if kept is None:
                    raise InvalidRequest(f"goal loop {loop_id} is gone")
                for iteration in kept.model.iterations[seen:]:
                    if iteration.progress is None:
                        break
                    say(f"  iteration {iteration.number}: {iteration.verdict}")
                    seen += 1
                if kept.model.ended:
                    return kept.model
                await changed.wait(30)
    finally:
        await store.close()


@loops_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Goal loops, newest first (every tenant's)."""
    loops = [kept.model for kept in reversed(_all())]
    if json_output:
        say_json([loop.model_dump(mode="json") for loop in loops])
        return
    if not loops:
        typer.echo("no goal loops")
        return
    table = Table("ID", "TENANT", "STATUS", "ITERATIONS", "SPENT", "AGE", "GOAL", box=None)
    now = time.time()
    for loop in loops:
        age = int(now - loop.created)
        table.add_row(
            loop.id,
            loop.tenant,
            loop.status,
            f"{len(loop.iterations)}/{loop.request.max_iterations}",
            f"${loop.spent_usd:.4f}",
            f"{age // 3600}h{age % 3600 // 60:02d}m",
            loop.request.goal[:50],
        )
    terminal().print(table)


def _all() -> list[Kept[GoalLoop]]:
    from golem.cli.stores import using_store
    from golem.core.config import load_config

    return using_store(load_config(), lambda store: _shelf(store).all(), tenant=None)


def _one(loop_id: str) -> GoalLoop:
    from golem.cli.stores import using_store
    from golem.core.config import load_config

    kept = using_store(load_config(), lambda store: _shelf(store).load(loop_id), tenant=None)
    if kept is None:
        raise InvalidRequest(f"no goal loop {loop_id!r}; see `golem loops ls`")
    return kept.model


@loops_app.command("show")
def show_command(
    loop_id: str = typer.Argument(...),
    json_output: bool = typer.Option(False, "--json", help="Print the loop as JSON."),
) -> None:
    """One goal loop: its goal, where it stands and why, each iteration's verdict."""
    loop = _one(loop_id)
    if json_output:
        say_json(loop)
        return
    _print_loop(terminal(), loop)


def _print_loop(console: GolemConsole, loop: GoalLoop) -> None:
    request = loop.request
    console.print(markup("[bold]{}[/] · {}", loop.id, loop.status), highlight=False)
    console.print(f"goal: {request.goal}", highlight=False)
    console.print(f"until: {request.until} · repo: {request.repo}")
    if loop.reason:
        console.print(f"why: {loop.reason}", highlight=False)
    budget = f" of ${request.budget_usd:.2f}" if request.budget_usd is not None else ""
    console.print(f"spent: ${loop.spent_usd:.4f}{budget}", highlight=False)
    if loop.pr is not None:
        console.print(f"pull request: {loop.pr.url}", highlight=False)
    if loop.baseline is not None:
        console.print(f"before: {loop.baseline.said()}", highlight=False)
    for iteration in loop.iterations:
        verdict = iteration.verdict or "running"
        console.print(
            f"  {iteration.number}. {iteration.run_id} {iteration.status or '-'}: {verdict}",
            highlight=False,
        )


def _status_change(loop_id: str, old: str, new: str, why: str) -> None:
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.service.loops import move_loop

    loop = _one(loop_id)
    if loop.status != old:
        raise RunConflict(f"goal loop {loop_id} is {loop.status}, not {old}")
    change = move_loop(old, new, why)  # type: ignore[arg-type]
    after = using_store(
        load_config(), lambda store: _shelf(store).change(loop_id, change), tenant=None
    )
    say(f"{loop_id}: {after.status if after else 'gone'}")


@loops_app.command("pause")
def pause_command(loop_id: str = typer.Argument(...)) -> None:
    """Start no next iteration (the one in progress ends as it would)."""
    _status_change(loop_id, "active", "paused", "paused from the command line")


@loops_app.command("resume")
def resume_command(loop_id: str = typer.Argument(...)) -> None:
    """Go on with a paused goal loop."""
    _status_change(loop_id, "paused", "active", "")


@loops_app.command("stop")
def stop_command(loop_id: str = typer.Argument(...)) -> None:
    """End a goal loop: nothing more starts, its run in progress is cancelled."""
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.service.loops import stop_loop

    loop = _one(loop_id)
    if loop.ended:
        raise RunConflict(f"goal loop {loop_id} has ended already ({loop.status})")
    after = using_store(
        load_config(),
        lambda store: stop_loop(store, loop, "the command line"),
        tenant=None,
    )
    say(f"{loop_id}: {after.status if after else 'gone'}")
