"""`golem blueprint validate|show`: check a blueprint, draw its graph."""

from __future__ import annotations

import typer

from golem.core.console import say

__all__ = ["blueprint_app"]

blueprint_app = typer.Typer(
    rich_markup_mode=None, help="Check and draw blueprints.", no_args_is_help=True
)


@blueprint_app.command("validate")
def validate_command(
    source: str = typer.Argument(..., help="A YAML file, or a built-in name."),
) -> None:
    """Check a blueprint; errors name the file and the line."""
    from golem.blueprint.loader import load_blueprint

    blueprint = load_blueprint(source)
    say(f"{source}: valid blueprint {blueprint.name!r} ({len(blueprint.nodes)} nodes)")


@blueprint_app.command("show")
def show_command(
    source: str = typer.Argument(
        "minion", help="A YAML file, or one of: minion, follow-up, prepare."
    ),
) -> None:
    """Draw a blueprint's graph as text."""
    from golem.blueprint.loader import load_blueprint
    from golem.blueprint.show import draw

    say(draw(load_blueprint(source)))
