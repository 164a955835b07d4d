"""golem.cli: the `golem` command (typer + rich)."""

from golem.cli.app import app, main

__all__ = ["app", "main"]
