"""`golem credentials set|ls|rm|new-key`: tenants' forge tokens in the server's store (run on
the server's host, with its configuration). A token is read from stdin or a variable, never
from the command line (argv is visible to every user of the host)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from golem.cli import options
from golem.cli.stores import using_store
from golem.core.config import GolemConfig, load_config
from golem.core.errors import ConfigError, InvalidRequest
from golem.store import ForgeName, TokenCipher, new_key

__all__ = ["credentials_app"]

credentials_app = typer.Typer(
    help="Tenants' forge tokens, sealed in the server's store (run on the server's host)."
)
FORGES: tuple[ForgeName, ...] = ("github", "gitlab")
TENANT = typer.Option(..., "--tenant", help="The tenant whose token it is.")
FORGE = typer.Option("github", "--forge", help="The forge: github or gitlab.")


def _config(config_file: Path | None) -> GolemConfig:
    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file {config_file} does not exist")
    return load_config(files=[config_file] if config_file is not None else None)


def _forge(name: str) -> ForgeName:
    for forge in FORGES:
        if name == forge:
            return forge
    raise InvalidRequest(f"--forge {name!r}: choose {', '.join(FORGES)}")


def _read_token(token_env: str | None) -> str:
    if token_env is not None:
        token = os.environ.get(token_env, "")
        if not token:
            raise InvalidRequest(f"${token_env} is unset or empty: export the token in it")
        return token
    if sys.stdin.isatty():
        return str(typer.prompt("Token", hide_input=True))
    token = sys.stdin.read(4096).strip()
    if not token:
        raise InvalidRequest("no token on stdin: pipe it in, or name a variable with --token-env")
    return token


@credentials_app.command("set")
def set_command(
    tenant: str = TENANT,
    forge: str = FORGE,
    token_env: str | None = typer.Option(
        None, "--token-env", help="Read the token from this variable; default: stdin."
    ),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Keep a tenant's token (replacing any): its runs use it, no other tenant's do."""
    chosen = _forge(forge)
    token = _read_token(token_env)
    config = _config(config_file)
    cipher = TokenCipher.from_config(config)
    using_store(config, lambda store: store.set_forge_token(chosen, token, cipher), tenant=tenant)
    typer.echo(f"{chosen} token of tenant {tenant} set")


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


@credentials_app.command("ls")
def list_command(
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Which tenants have a token for which forge (never the tokens)."""
    listed = using_store(
        _config(config_file), lambda store: store.list_forge_credentials(), tenant=tenant
    )
    if json_output:
        typer.echo(json.dumps([c.model_dump() for c in listed], indent=2))
        return
    table = Table("TENANT", "FORGE", "SET", box=None)
    for credential in listed:
        table.add_row(credential.tenant, credential.forge, _when(credential.updated))
    Console().print(table)


@credentials_app.command("rm")
def remove_command(
    tenant: str = TENANT, forge: str = FORGE, config_file: Path | None = options.CONFIG
) -> None:
    """Forget a tenant's token."""
    chosen = _forge(forge)
    config = _config(config_file)
    if not using_store(config, lambda store: store.delete_forge_token(chosen), tenant=tenant):
        raise InvalidRequest(f"tenant {tenant!r} has no {chosen} token; see `golem credentials ls`")
    typer.echo(f"{chosen} token of tenant {tenant} deleted")


@credentials_app.command("new-key")
def new_key_command() -> None:
    """Print a new key for ``[server] credentials_key_env`` (to share among servers)."""
    typer.echo(new_key())
