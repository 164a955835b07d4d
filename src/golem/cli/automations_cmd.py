"""`golem automations ls|show`: the automations in golem's store (golem.toml's, which a
golem serve keeps there, and the API's), each with its last and its next run."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.core.console import markup, say_json, terminal
from golem.core.errors import InvalidRequest

if TYPE_CHECKING:
    from golem.service.automations import AutomationView
    from golem.store import Store

__all__ = ["automations_app"]

automations_app = typer.Typer(
    rich_markup_mode=None, help="Automations: list or show them, with their last and next run."
)


async def _views(store: Store) -> list[AutomationView]:
    from golem.service.automations import KIND, Automation, view_of
    from golem.service.documents import Shelf

    shelf = Shelf(store, KIND, Automation)
    return [await view_of(store, kept) for kept in await shelf.all()]


def _all_views() -> list[AutomationView]:
    from golem.cli.stores import using_store
    from golem.core.config import load_config

    return using_store(load_config(), _views, tenant=None)


def _when(moment: float | None) -> str:
    if moment is None:
        return "-"
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%MZ")


def _started_by(view: AutomationView) -> str:
    definition = view.definition
    if definition.cron is not None:
        return f"cron {definition.cron} ({definition.timezone})"
    if definition.event is not None:
        return f"{definition.event} on {definition.watch}"
    return "webhook"


@automations_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Automations (every tenant's), with their last run and their next run."""
    views = _all_views()
    if json_output:
        say_json([view.model_dump(mode="json") for view in views])
        return
    if not views:
        typer.echo("no automations (golem.toml's reach the store when golem serve starts)")
        return
    table = Table("NAME", "TENANT", "STARTED BY", "LAST RUN", "NEXT RUN", box=None)
    for view in views:
        last = view.last_run
        shown = f"{last.run_id} {view.last_run_status} {_when(last.at)}" if last else "-"
        enabled = "" if view.definition.enabled else " (disabled)"
        table.add_row(
            view.name + enabled,
            view.tenant,
            _started_by(view),
            shown,
            _when(view.next_run),
        )
    terminal().print(table)


@automations_app.command("show")
def show_command(name: str = typer.Argument(...)) -> None:
    """One automation: its definition, the runs it started, what it skipped and why."""
    found = [view for view in _all_views() if view.name == name]
    if not found:
        raise InvalidRequest(f"no automation {name!r}; see `golem automations ls`")
    view = found[0]
    console = terminal()
    console.print(
        markup("[bold]{}[/] · {} · tenant {}", view.name, view.origin, view.tenant),
        highlight=False,
    )
    console.print(f"started by: {_started_by(view)}", highlight=False)
    console.print(f"next run: {_when(view.next_run)}", highlight=False)
    for fired in view.fired:
        console.print(
            f"  ran {fired.run_id} ({fired.how}, {fired.key}) {_when(fired.at)}", highlight=False
        )
    for skipped in view.skipped:
        console.print(
            f"  skipped {skipped.key} {_when(skipped.at)}: {skipped.why}",
            highlight=False,
        )
