"""`golem sessions ls|rm` and `golem prune`: this machine's boxes, recorded in the state
directory; with ``[remote] url`` set, `sessions` lists and removes the key's sessions on that
server (`prune` still removes this machine's orphans: the server prunes its own)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import typer
from rich.table import Table

from golem.core.console import say, say_json, styled, terminal

if TYPE_CHECKING:
    from golem.sandbox import BoxInfo, Engine

__all__ = ["prune_command", "sessions_app"]

sessions_app = typer.Typer(
    rich_markup_mode=None, help="List and remove boxes.", no_args_is_help=True
)

T = TypeVar("T")


def _with_engine(work: Callable[[Engine], Awaitable[T]]) -> T:
    """``work(engine)`` with the configured engine (this machine's, or with ``[remote] url``
    the server's), closed afterwards."""
    from golem.core.config import load_config
    from golem.sandbox import make_engine

    async def main() -> T:
        async with make_engine(load_config()) as engine:
            return await work(engine)

    return asyncio.run(main())


def _age(created: float) -> str:
    seconds = int(time.time() - created)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds}s"


def _table(boxes: list[BoxInfo]) -> Table:
    table = Table("ID", "ISOLATION", "OWNER", "STATE", "AGE", "IMAGE", box=None)
    for info in boxes:
        state = "live" if info.owner_alive else styled("orphan", "yellow")
        isolation = str(info.isolation) if info.isolation is not None else info.backend
        table.add_row(
            info.id, isolation, str(info.owner_pid), state, _age(info.created), info.image or "-"
        )
    return table


@sessions_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every box golem knows of, live or orphaned."""
    boxes = _with_engine(lambda engine: engine.boxes())
    if json_output:
        say_json([b.model_dump(mode="json") for b in boxes])
    elif boxes:
        terminal().print(_table(boxes))
    else:
        typer.echo("no boxes")


@sessions_app.command("rm")
def remove_command(
    box_id: str = typer.Argument(..., help="The box id (see `sessions ls`)."),
) -> None:
    """Remove a box (one left behind by a process that is gone; with ``[remote] url``, a
    session of the key's on the server)."""
    _with_engine(lambda engine: engine.remove_session(box_id))
    say(f"removed {box_id}")


def prune_command() -> None:
    """Remove every box whose owning process is gone, and report what was removed.

    This machine's boxes only, ``[remote] url`` or not: a server prunes its own."""
    from golem.core.config import load_config
    from golem.sandbox import LocalEngine

    config = load_config()
    if config.remote.url is not None:
        terminal(stderr=True).print(
            f"[remote] url is {config.remote.url}: golem prune removes this machine's "
            "orphaned boxes only; that server removes its own",
            markup=False,
            highlight=False,
        )
    removed = asyncio.run(LocalEngine(config).prune())
    for info in removed:
        say(f"removed {info.id} ({info.backend}, owner pid {info.owner_pid} gone)")
    say(f"pruned {len(removed)} box(es)")
