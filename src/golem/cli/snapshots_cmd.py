"""`golem snapshots ls|prune`: the snapshots of boxes kept in this machine's state
directory, every tenant's (a server's are on its own host: run these there)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from golem.sandbox import SnapshotInfo, SnapshotStore

__all__ = ["snapshots_app"]

snapshots_app = typer.Typer(
    rich_markup_mode=None,
    help="List and prune snapshots of boxes (this machine's state directory).",
    no_args_is_help=True,
)


def _store() -> SnapshotStore:
    from golem.core.config import load_config
    from golem.sandbox import SnapshotStore

    return SnapshotStore(load_config().state_dir)


def _age(created: float) -> str:
    seconds = int(time.time() - created)
    if seconds >= 86400:
        return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds}s"


def _print(infos: list[SnapshotInfo], json_output: bool) -> None:
    from rich.table import Table

    from golem.core.console import say_json, terminal
    from golem.core.sizes import format_size

    if json_output:
        say_json([info.model_dump(mode="json") for info in infos])
        return
    table = Table("TENANT", "NAME", "DIGEST", "SIZE", "AGE", "BACKEND", "IMAGE", box=None)
    for info in infos:
        table.add_row(
            info.tenant,
            info.name,
            f"sha256:{info.digest[:12]}",
            format_size(info.size),
            _age(info.created),
            info.backend,
            info.image or "-",
        )
    terminal().print(table)


@snapshots_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every tenant's snapshots, oldest first."""
    infos = _store().all()
    if infos or json_output:
        _print(infos, json_output)
    else:
        typer.echo("no snapshots")


@snapshots_app.command("prune")
def prune_command(
    older_than: str | None = typer.Option(
        None, "--older-than", help="Remove snapshots taken longer ago than this (30m, 12h, 7d)."
    ),
    max_size: str | None = typer.Option(
        None, "--max-size", help="Then remove the oldest until the rest fit in this (512m, 20g)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print what was removed as JSON."),
) -> None:
    """Remove snapshots by age, then the oldest past a size; started boxes keep their copy."""
    from golem.core.durations import parse_duration
    from golem.core.sizes import parse_size

    if older_than is None and max_size is None:
        raise typer.BadParameter("give --older-than, --max-size or both", param_hint="prune")
    try:
        seconds = parse_duration(older_than) if older_than is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--older-than") from None
    try:
        limit = parse_size(max_size) if max_size is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--max-size") from None
    removed = _store().prune(older_than=seconds, max_bytes=limit)
    if json_output or removed:
        _print(removed, json_output)
    else:
        typer.echo("nothing to prune")
