"""The `golem` command: wires the command groups together and turns errors into exit codes.

Commands are listed in ``COMMANDS`` and imported only when run (`golem --help` stays fast);
a command's summary there is the first paragraph of its own help (a test keeps them equal).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from golem import __version__
from golem.cli.lazy import lazy_group

if TYPE_CHECKING:
    from golem.core.errors import GolemError

__all__ = ["COMMANDS", "app", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "exec": (
        "golem.cli.exec_cmd:exec_command",
        "Run code, a script or a command in a fresh box; exit with its exit code.",
    ),
    "shell": (
        "golem.cli.shell_cmd:shell_command",
        "Open an interactive shell in a fresh box (needs a terminal).",
    ),
    "prune": (
        "golem.cli.sessions_cmd:prune_command",
        "Remove every box whose owning process is gone, and report what was removed.",
    ),
    "setup": (
        "golem.cli.setup_cmd:setup_command",
        "Bootstrap golem's devbox image if missing and build every image recipe of golem.toml.",
    ),
    "run": (
        "golem.cli.run_cmd:run_command",
        "Run a blueprint on a repository and end with a pull request (or, with --pr, "
        "answer a pull request's review with new commits on its branch).",
    ),
    "prepare": (
        "golem.cli.prepare_cmd:prepare_command",
        "Make or refresh the prepared snapshot of a repository's branch: its head checked "
        "out, dependencies installed, setup and [prepared] warmup run; runs on the "
        "repository start from it.",
    ),
    "loop": (
        "golem.cli.loops_cmd:loop_command",
        "Start a goal loop: runs on one branch, each from the last one's result, until the "
        "--until command passes in the box, the budget is spent, or two runs in a row make "
        "no progress on it. A golem serve on this store drives it.",
    ),
    "loops": (
        "golem.cli.loops_cmd:loops_app",
        "Goal loops: list, show, pause, resume or stop.",
    ),
    "automations": (
        "golem.cli.automations_cmd:automations_app",
        "Automations: list or show them, with their last and next run.",
    ),
    "agent": (
        "golem.cli.agent_cmd:agent_command",
        "Run the agent on a directory in a box and show the diff it made.",
    ),
    "serve": (
        "golem.cli.serve_cmd:serve_command",
        "Serve the HTTP API, the job queue and the dashboard until stopped.",
    ),
    "mcp": (
        "golem.cli.mcp_cmd:mcp_command",
        "Serve golem's boxes and runs as MCP tools on stdin and stdout (for Claude Code, "
        "Cursor or any MCP client).",
    ),
    "doctor": (
        "golem.cli.doctor_cmd:doctor_command",
        "List each backend: whether it works here and why not, with its measured start "
        "time; and the backend serving each isolation tier.",
    ),
    "sessions": ("golem.cli.sessions_cmd:sessions_app", "List and remove boxes."),
    "snapshots": (
        "golem.cli.snapshots_cmd:snapshots_app",
        "List and prune snapshots of boxes (this machine's state directory).",
    ),
    "cluster": (
        "golem.cli.cluster_cmd:cluster_app",
        "The Ray cluster golem's boxes run on ([cluster] ray_address).",
    ),
    "config": ("golem.cli.config_cmd:config_app", "Inspect golem's configuration."),
    "image": ("golem.cli.image_cmd:image_app", "Build and list box images."),
    "runs": (
        "golem.cli.runs_cmd:runs_app",
        "Runs: list, show, resume, cancel, approve or reject.",
    ),
    "prs": ("golem.cli.prs_cmd:prs_app", "Pull requests of the local forge."),
    "checks": (
        "golem.cli.checks_cmd:checks_app",
        "A repository's checks: what golem detects and runs.",
    ),
    "blueprint": ("golem.cli.blueprint_cmd:blueprint_app", "Check and draw blueprints."),
    "eval": (
        "golem.cli.eval_cmd:eval_app",
        "Measure golem on your own repositories: make tasks, run them, compare runs.",
    ),
    "keys": (
        "golem.cli.serve_cmd:keys_app",
        "API keys of the server (run on the server's host).",
    ),
    "credentials": (
        "golem.cli.credentials_cmd:credentials_app",
        "Tenants' forge tokens, sealed in the server's store (run on the server's host).",
    ),
    "trajectory": ("golem.cli.trajectory_cmd:trajectory_app", "Read recorded agent runs."),
    "toolshed": (
        "golem.cli.toolshed_cmd:toolshed_app",
        "The toolshed: MCP servers whose tools agent steps get.",
    ),
}

app = typer.Typer(
    rich_markup_mode=None,
    name="golem",
    cls=lazy_group(COMMANDS),
    help="Unattended, one-shot coding agents in isolated devboxes.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold secrets
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from golem.core.console import say  # noqa: PLC0415

        say(f"golem {__version__}")
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
    except SystemExit:  # how click ends, --help too: never worth importing golem.core for
        raise
    except _golem_error() as exc:  # evaluated only when something else was raised
        from golem.core.console import markup, terminal  # noqa: PLC0415

        message = markup("[bold red]golem: [/]{}", exc.message)
        terminal(stderr=True, soft_wrap=True).print(message, highlight=False)
        sys.exit(exc.exit_code)


def _golem_error() -> type[GolemError]:
    """GolemError, imported late: golem.core loads pydantic, which `--help` never needs."""
    from golem.core.errors import GolemError  # noqa: PLC0415

    return GolemError
