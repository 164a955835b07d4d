"""Every command's `--help` shows its help and each option's help as written: nothing in
square brackets ("[server] port", "[engine.tiers.<tier>]") is taken for markup and lost.
The commands are found by walking the app, so a new command or option is held to this too."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator

import click
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from golem.cli.app import app
from golem.cli.lazy import LazyCommand


def commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """``command`` and every command below it (loaded), each with its path under golem."""
    yield path, command
    if isinstance(command, TyperGroup):
        context = typer.Context(command, info_name=path[-1] if path else "golem")
        for name in command.list_commands(context):
            found = command.get_command(context, name)
            assert found is not None, name
            loaded = found.load() if isinstance(found, LazyCommand) else found
            yield from commands(loaded, (*path, name))


def words(text: str) -> str:
    """``text`` as a help page shows it, whatever its wrapping (a word wrapped at its
    hyphen is one word) and frame: its words."""
    unwrapped = re.sub(r"(?<=\w-)\n\s*", "", text.replace("\b", " "))
    return " ".join(unwrapped.translate(str.maketrans("", "", "│╭╮╰╯─")).split())


def written(command: click.Command) -> list[str]:
    """The help texts of ``command`` as its source writes them: its own (up to typer's
    ``\\f``, where the page stops) and each of its options' and arguments'."""
    own = inspect.cleandoc(command.help or "").split("\f")[0]
    helps = [own] + [getattr(param, "help", None) or "" for param in command.params]
    return [words(text) for text in helps if text.strip()]


def test_the_walk_reaches_every_command_and_option() -> None:
    found = {" ".join(path): command for path, command in commands(typer.main.get_command(app))}
    assert {"run", "runs ls", "serve", "doctor", "eval run", "keys create"} <= set(found)
    assert "--tier" in {opt for param in found["run"].params for opt in param.opts}


def test_every_help_text_is_shown_whole_brackets_and_all() -> None:
    runner = CliRunner()
    lost: list[str] = []
    bracketed = 0
    for path, command in commands(typer.main.get_command(app)):
        shown = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
        assert shown.exit_code == 0, (path, shown.output)
        page = words(shown.output)
        for text in written(command):
            bracketed += "[" in text
            if text not in page:
                lost.append(f"golem {' '.join(path)}: {text!r}")
    assert bracketed > 0, "no help text with brackets: this test proves nothing any more"
    assert lost == []
