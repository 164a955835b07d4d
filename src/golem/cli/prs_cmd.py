"""`golem prs ls|show`: pull requests the local forge opened."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.core.ansi import plain
from golem.core.console import markup, say_json, terminal
from golem.core.errors import InvalidRequest

if TYPE_CHECKING:
    from golem.forge import PullRequest

__all__ = ["prs_app"]

prs_app = typer.Typer(rich_markup_mode=None, help="Pull requests of the local forge.")


def _pull_requests(repo: str | None) -> list[PullRequest]:
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.forge import LocalForge

    return using_store(load_config(), lambda store: LocalForge(store).pull_requests(repo))


@prs_app.command("ls")
def list_command(
    repo: str | None = typer.Option(None, "--repo", help="Only this repository's."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Pull requests, newest first."""
    prs = _pull_requests(repo)
    if json_output:
        say_json([pr.model_dump(mode="json") for pr in prs])
        return
    if not prs:
        typer.echo("no pull requests")
        return
    table = Table("#", "REPO", "BRANCH", "TITLE", "CHECKS", box=None)
    for pr in prs:
        passed = sum(1 for c in pr.checks if c.passed)
        state = "draft, " if pr.draft else ""
        table.add_row(
            str(pr.number),
            pr.repo,
            pr.head,
            pr.title,
            f"{state}{passed}/{len(pr.checks)} passed",
        )
    terminal().print(table)


@prs_app.command("show")
def show_command(
    number: int = typer.Argument(..., help="The pull request's number."),
    repo: str | None = typer.Option(None, "--repo", help="Its repository, if several."),
) -> None:
    """One pull request: title, body, checks and diff."""
    prs = [p for p in _pull_requests(repo) if p.number == number]
    if not prs:
        raise InvalidRequest(f"no pull request #{number}; see `golem prs ls`")
    if len(prs) > 1:
        repos = ", ".join(p.repo for p in prs)
        raise InvalidRequest(f"#{number} exists in several repositories ({repos}); add --repo")
    pr = prs[0]
    console = terminal(soft_wrap=True)  # a URL or branch stays whole on a narrow terminal
    draft = " (draft)" if pr.draft else ""
    console.print(markup("[bold]#{} {}[/]{}", pr.number, pr.title, draft))
    console.print(f"{pr.url} · {pr.head} -> {pr.base}")
    if pr.labels:
        console.print("labels: " + ", ".join(pr.labels))
    console.rule()
    console.print(pr.body)
    console.rule()
    print_diff(pr.diff)


DIFF_COLOURS = {"+": "green", "-": "red", "@": "cyan"}


def print_diff(diff: str) -> None:
    """The diff line for line, never wrapped or cut. Piped (to `git apply`, say) it is
    written exactly; on a terminal coloured, without control characters (escape sequences
    in a diff must not drive the terminal)."""
    if not sys.stdout.isatty():
        sys.stdout.write(diff)
        sys.stdout.flush()
        return
    lines = diff.split("\n")
    for index, line in enumerate(lines):
        text = plain(line)
        colour = None if text.startswith(("+++", "---")) else DIFF_COLOURS.get(text[:1])
        styled = typer.style(text, fg=colour) if colour else text
        typer.echo(styled, nl=index < len(lines) - 1)
