"""`golem config show|schema`: the effective configuration and its JSON Schema."""

from __future__ import annotations

import typer

from golem.core.console import say, say_json

__all__ = ["config_app"]

config_app = typer.Typer(
    rich_markup_mode=None, help="Inspect golem's configuration.", no_args_is_help=True
)


@config_app.command("show")
def show_command() -> None:
    """Print the effective configuration (files < GOLEM_* env), secrets masked."""
    from golem.core.config import config_files, load_config

    config = load_config()
    files = [str(p) for p in config_files()]
    say(f"# from: {', '.join(files) if files else 'defaults'} + GOLEM_* environment")
    say_json(config.model_dump(mode="json"))


@config_app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of golem.toml (the same models as env vars and flags)."""
    from golem.core.config import GolemConfig

    say_json(GolemConfig.model_json_schema())
