"""`golem checks detect`: the commands golem finds in a repository, and why; `--write`
makes them a `.golem.toml` the user can commit."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.core.console import GolemConsole, say_json, terminal
from golem.core.errors import ConfigError

if TYPE_CHECKING:
    from golem.checks import RepoConventions

__all__ = ["checks_app"]

checks_app = typer.Typer(
    rich_markup_mode=None,
    help="A repository's checks: what golem detects and runs.",
    no_args_is_help=True,
)


@checks_app.command("detect")
def detect_command(
    repo: Path = typer.Option(Path("."), "--repo", help="The repository's directory."),
    write: bool = typer.Option(False, "--write", help="Write what was found to .golem.toml."),
    force: bool = typer.Option(False, "--force", help="With --write: replace a .golem.toml."),
    json_output: bool = typer.Option(False, "--json", help="Print the conventions as JSON."),
) -> None:
    """Print the install, lint, build and test commands found in the repository's CI,
    task runners and ecosystem, and why; --write saves them as its .golem.toml."""
    from golem.checks import CONVENTIONS_FILE, detect_conventions, render_conventions

    if not repo.is_dir():
        raise ConfigError(f"{repo} is not a directory; give the repository's with --repo PATH")
    target = repo / CONVENTIONS_FILE
    exists = os.path.lexists(target)
    if write and exists and not force:
        raise ConfigError(
            f"{target} exists and was not replaced; pass --force to replace it with what "
            "golem detects, or edit it by hand"
        )
    conventions = detect_conventions(repo)
    console = terminal(soft_wrap=True)
    if json_output:
        say_json(conventions)
    else:
        _print(console, conventions)
    if write:
        _write_atomically(target, render_conventions(conventions))
        console.print(f"wrote {target}: commit it to make these the repository's commands")
    elif exists:
        console.print(f"note: {target} exists; runs use it, not what is detected here")


def _print(console: GolemConsole, conventions: RepoConventions) -> None:
    used = [f for f in conventions.findings if f.used]
    unused = [f for f in conventions.findings if not f.used]
    for title, findings in (("found", used), ("found but not used", unused)):
        if not findings:
            continue
        table = Table(title=title, box=None, title_justify="left")
        for column in ("STEP", "COMMAND", "ORIGIN", "WHY"):
            table.add_column(column, overflow="fold")
        for finding in findings:
            table.add_row(
                finding.step,
                finding.command,
                finding.origin,
                finding.why,
            )
        console.print(table)
    console.print(f"checks: {conventions.source}")
    console.print(f"ecosystems: {', '.join(conventions.ecosystems) or 'none recognised'}")
    if conventions.cache:
        keys = ", ".join(conventions.cache_keys) or "the install commands"
        console.print(f"install caches: {', '.join(conventions.cache)} (keyed by {keys})")
        console.print(f"install reaches: {' '.join(conventions.registries)}")
    for name, value in conventions.env.items():
        console.print(f"env: {name}={value}")
    if not conventions.verifies:
        console.print(
            "nothing here verifies a change: a run would end unverified. Name the test "
            "command in .golem.toml's [commands] (--write gives a file to fill in).",
            markup=False,
        )


def _write_atomically(target: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".golem.toml.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
