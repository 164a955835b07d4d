"""`golem sessions ls|rm` and `golem prune`: boxes recorded in the state directory."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from golem.sandbox import BoxInfo, LocalEngine

__all__ = ["prune_command", "sessions_app"]

sessions_app = typer.Typer(help="List and remove boxes.", no_args_is_help=True)


def _engine() -> LocalEngine:
    """This machine's engine, as configured (its boxes are the ones listed here)."""
    from golem.core.config import load_config
    from golem.sandbox import LocalEngine

    return LocalEngine(load_config())


def _age(created: float) -> str:
    seconds = int(time.time() - created)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds}s"


def _table(boxes: list[BoxInfo]) -> Table:
    table = Table("ID", "ISOLATION", "OWNER", "STATE", "AGE", "IMAGE", box=None)
    for info in boxes:
        state = "live" if info.owner_alive else "[yellow]orphan[/]"
        isolation = str(info.isolation) if info.isolation is not None else info.backend
        table.add_row(
            info.id, isolation, str(info.owner_pid), state, _age(info.created), info.image or "-"
        )
    return table


@sessions_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every box golem knows of, live or orphaned."""
    boxes = asyncio.run(_engine().boxes())
    if json_output:
        typer.echo(json.dumps([b.model_dump(mode="json") for b in boxes], indent=2))
    elif boxes:
        Console().print(_table(boxes))
    else:
        typer.echo("no boxes")


@sessions_app.command("rm")
def remove_command(
    box_id: str = typer.Argument(..., help="The box id (see `sessions ls`)."),
) -> None:
    """Remove a box left behind by a process that is gone."""
    asyncio.run(_engine().remove_session(box_id))
    typer.echo(f"removed {box_id}")


def prune_command() -> None:
    """Remove every box whose owning process is gone, and report what was removed."""
    removed = asyncio.run(_engine().prune())
    for info in removed:
        typer.echo(f"removed {info.id} ({info.backend}, owner pid {info.owner_pid} gone)")
    typer.echo(f"pruned {len(removed)} box(es)")
