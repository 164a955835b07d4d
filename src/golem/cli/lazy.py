"""Commands loaded when they run: `golem --help` lists every command without importing the
libraries behind them (engines, stores, models, the server), which take over a second."""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyCommand", "LazyGroup", "lazy_group"]


class LazyCommand(TyperCommand):
    """A command known by name and summary until it is run (or asked for its own help):
    the group lists it as it is and resolves it to ``load()`` to run it.

    ``target`` is ``"module:attribute"``: a `typer.Typer` (a command group) or a function
    (one command), exactly as `app.add_typer` or `app.command` would take it.
    """

    def __init__(self, name: str, target: str, summary: str) -> None:
        super().__init__(name, help=summary, short_help=summary)
        self.target = target
        self._loaded: TyperCommand | TyperGroup | None = None

    def load(self) -> TyperCommand | TyperGroup:
        """The real command, imported on first use."""
        if self._loaded is None:
            module_name, attribute = self.target.split(":")
            found = getattr(importlib.import_module(module_name), attribute)
            self._loaded = _as_click(found, self.name or attribute)
        return self._loaded


class LazyGroup(TyperGroup):
    """A group whose eagerly registered commands come first, then its ``lazy_commands``
    (name -> target and summary)."""

    lazy_commands: ClassVar[dict[str, tuple[str, str]]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, (target, summary) in self.lazy_commands.items():
            self.commands.setdefault(name, LazyCommand(name, target, summary))

    def get_help_option(self, ctx: Any) -> Any:
        """``--help``, False when absent (see ``_absent_help_is_false``)."""
        return _absent_help_is_false(super().get_help_option(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """The command to run (or complete): loaded now."""
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, LazyCommand):
            command = command.load()
        return name, command, rest


def lazy_group(commands: dict[str, tuple[str, str]]) -> type[LazyGroup]:
    """A group class (for ``typer.Typer(cls=...)``) that adds ``commands`` lazily."""
    return type("GolemGroup", (LazyGroup,), {"lazy_commands": commands})


def _absent_help_is_false(option: Any) -> Any:
    """typer coerces an option's value through a pydantic adapter unless it is a bool, and
    an absent ``--help`` is None: every group on the way to a subcommand (``golem`` and
    ``runs`` in ``golem runs ls --help``), and the command run, would import pydantic and
    build an adapter for nothing. False is what an absent flag means."""
    if option is not None:
        option.default = False
    return option


def _absent_helps_are_false(command: TyperCommand | TyperGroup) -> None:
    """``_absent_help_is_false`` for ``command`` and every command below it."""
    _absent_help_is_false(command.get_help_option(typer.Context(command)))
    for below in getattr(command, "commands", {}).values():
        _absent_helps_are_false(below)


def _as_click(found: object, name: str) -> TyperCommand | TyperGroup:
    if isinstance(found, typer.Typer):
        group = typer.main.get_group(found)
        group.name = name
        _absent_helps_are_false(group)
        return group
    if callable(found):
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(name)(found)
        command = typer.main.get_command(single)
        assert isinstance(command, TyperCommand)
        _absent_helps_are_false(command)
        return command
    raise TypeError(f"{name}: {found!r} is neither a typer app nor a command function")
