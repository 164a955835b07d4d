"""The `golem` command: wires the command groups together and turns errors into exit codes."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.text import Text

from golem import __version__
from golem.cli import (
    agent_cmd,
    blueprint_cmd,
    checks_cmd,
    config_cmd,
    credentials_cmd,
    exec_cmd,
    image_cmd,
    prs_cmd,
    run_cmd,
    runs_cmd,
    serve_cmd,
    sessions_cmd,
    setup_cmd,
    shell_cmd,
    trajectory_cmd,
)
from golem.core.errors import GolemError

__all__ = ["app", "main"]

app = typer.Typer(
    name="golem",
    help="Unattended, one-shot coding agents in isolated devboxes.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold secrets
    add_completion=False,
)
app.command("exec")(exec_cmd.exec_command)
app.command("shell")(shell_cmd.shell_command)
app.command("prune")(sessions_cmd.prune_command)
app.command("setup")(setup_cmd.setup_command)
app.command("run")(run_cmd.run_command)
app.command("agent")(agent_cmd.agent_command)
app.command("serve")(serve_cmd.serve_command)
app.add_typer(sessions_cmd.sessions_app, name="sessions")
app.add_typer(config_cmd.config_app, name="config")
app.add_typer(image_cmd.image_app, name="image")
app.add_typer(runs_cmd.runs_app, name="runs")
app.add_typer(prs_cmd.prs_app, name="prs")
app.add_typer(blueprint_cmd.blueprint_app, name="blueprint")
app.add_typer(serve_cmd.keys_app, name="keys")
app.add_typer(credentials_cmd.credentials_app, name="credentials")
app.add_typer(trajectory_cmd.trajectory_app, name="trajectory")
app.add_typer(checks_cmd.checks_app, name="checks")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"golem {__version__}")
        raise typer.Exit


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """golem: a task goes in, a reviewed-ready pull request comes out."""


def main() -> None:
    """Entry point: run the app; a GolemError becomes one line on stderr and its exit code.

    Usage errors are click's: a usage line and exit code 2.
    """
    try:
        app()
    except GolemError as exc:
        message = Text.assemble(("golem: ", "bold red"), exc.message)
        Console(stderr=True, soft_wrap=True).print(message, highlight=False)
        sys.exit(exc.exit_code)
