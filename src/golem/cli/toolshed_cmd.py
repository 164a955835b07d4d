"""`golem toolshed ls`: the configured MCP servers, their tools, and which steps of a
blueprint get each."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import GolemConsole, markup, say_json, terminal
from golem.core.errors import ConfigError, GolemError

TARGET_SHOWN = 100
"""A server's command or url is shown this long at most (--json gives it whole)."""

if TYPE_CHECKING:
    from golem.blueprint.model import Blueprint
    from golem.context.toolshed import Toolshed
    from golem.core.config import GolemConfig
    from golem.core.toolshed_config import McpServer
    from golem.sandbox import Box

__all__ = ["toolshed_app"]

toolshed_app = typer.Typer(
    rich_markup_mode=None,
    help="The toolshed: MCP servers whose tools agent steps get.",
    no_args_is_help=True,
)


@toolshed_app.command("ls")
def ls_command(
    blueprint: str = typer.Option(
        "minion", "--blueprint", help="A blueprint file or built-in name: whose steps to show."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print the listing as JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """List the toolshed's servers and their tools (connecting to each: stdio servers in a
    box made like a run's), and which steps of the blueprint get each tool."""
    from golem.blueprint.loader import load_blueprint
    from golem.core.config import load_config

    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file {config_file} does not exist")
    config = load_config(files=[config_file] if config_file else None)
    chosen = load_blueprint(blueprint)
    servers = asyncio.run(_list(config, chosen)) if config.toolshed.servers else []
    if json_output:
        say_json({"blueprint": chosen.name, "servers": servers})
    elif not servers:
        typer.echo("no toolshed servers: add [[toolshed.servers]] to golem.toml")
    else:
        _print(terminal(soft_wrap=True), servers)


async def _list(config: GolemConfig, blueprint: Blueprint) -> list[dict[str, Any]]:
    """Each server with its tools (or why they could not be listed)."""
    from golem.context.toolshed import Toolshed  # loads the MCP SDK
    from golem.sandbox import make_engine

    box_settings = {k: v for k, v in blueprint.box.items() if k != "secrets_env"}
    shed = Toolshed(config)
    async with make_engine(config) as engine, engine.session(box_settings) as box:
        try:
            return [
                await _server(shed, box, server, blueprint) for server in config.toolshed.servers
            ]
        finally:
            await shed.close()


async def _server(
    shed: Toolshed, box: Box, server: McpServer, blueprint: Blueprint
) -> dict[str, Any]:
    from golem.blueprint.steps.agent import toolshed_steps
    from golem.context.toolshed.selection import parse_patterns, wire_name

    entry: dict[str, Any] = {
        "name": server.name,
        "transport": server.transport,
        "target": server.url or shlex.join(server.command or []),
        "tools": [],
        "error": None,
    }
    try:
        listed = await shed.listing(box, server.name)
    except GolemError as exc:
        entry["error"] = exc.message
        return entry
    steps = [
        (name, parse_patterns(settings.toolshed)) for name, settings in toolshed_steps(blueprint)
    ]
    for tool in listed:
        chosen_by = [
            name
            for name, patterns in steps
            if any(p.matches(server.name, tool.name) for p in patterns)
        ]
        entry["tools"].append(
            {
                "name": tool.shown.name,
                "wire_name": wire_name(server.name, tool.shown.name),
                "description": (tool.shown.description or "").strip().split("\n")[0],
                "steps": chosen_by,
            }
        )
    return entry


def _print(console: GolemConsole, servers: list[dict[str, Any]]) -> None:
    for server in servers:
        target = server["target"]
        target = target if len(target) <= TARGET_SHOWN else target[: TARGET_SHOWN - 3] + "..."
        console.print(
            markup("[bold]{}[/bold] ({}) {}", server["name"], server["transport"], target)
        )
        if server["error"]:
            console.print(markup("  [red]unavailable:[/red] {}", server["error"]))
            continue
        table = Table(box=None, padding=(0, 2))
        for column in ("TOOL", "MODEL SEES", "STEPS", "DESCRIPTION"):
            table.add_column(column, overflow="fold")
        for tool in server["tools"]:
            steps = ", ".join(tool["steps"]) or "-"
            table.add_row(tool["name"], tool["wire_name"], steps, tool["description"])
        console.print(table)
