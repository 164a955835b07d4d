"""`golem credentials set|ls|rm|new-key`: tenants' forge tokens in the server's store (run on
the server's host, with its configuration). A token is read from stdin or a variable, never
from the command line (argv is visible to every user of the host); a GitHub App's private
key from its file; a GitLab OAuth grant's refresh token and secret from variables."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import say, say_json, terminal
from golem.core.errors import ConfigError, ForgeCredentialsRefused, InvalidRequest

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.store import AppKey, ForgeName, ForgeSecret, OAuthGrant

__all__ = ["credentials_app"]

credentials_app = typer.Typer(
    rich_markup_mode=None,
    help="Tenants' forge tokens, sealed in the server's store (run on the server's host).",
)
FORGES: tuple[ForgeName, ...] = ("github", "gitlab")
TENANT = typer.Option(..., "--tenant", help="The tenant whose token it is.")
FORGE = typer.Option("github", "--forge", help="The forge: github or gitlab.")


def _config(config_file: Path | None) -> GolemConfig:
    from golem.core.config import load_config

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


def _variable(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise InvalidRequest(f"${name} is unset or empty: export the value in it")
    return value


def _app_key(
    forge: ForgeName, app_id: int, key_file: Path | None, installation: int | None
) -> AppKey:
    from golem.forge.github_app import check_app_key
    from golem.store import AppKey

    if forge != "github" or key_file is None:
        raise InvalidRequest("a GitHub App needs --forge github, --app-id and --private-key FILE")
    try:
        pem = key_file.read_text()
        check_app_key(pem, str(key_file))
    except OSError as exc:
        raise InvalidRequest(f"cannot read {key_file}: {exc.strerror}") from exc
    except ForgeCredentialsRefused as exc:
        raise InvalidRequest(exc.message) from exc
    return AppKey(app_id=app_id, private_key=pem, installation_id=installation)


def _grant(
    token: str, refresh_env: str, client_id: str | None, secret_env: str | None
) -> OAuthGrant:
    from golem.store import OAuthGrant

    return OAuthGrant(
        access_token=token,
        refresh_token=_variable(refresh_env),
        client_id=client_id,
        client_secret=_variable(secret_env) if secret_env else None,
    )


@credentials_app.command("set")
def set_command(
    tenant: str = TENANT,
    forge: str = FORGE,
    token_env: str | None = typer.Option(
        None, "--token-env", help="Read the token from this variable; default: stdin."
    ),
    app_id: int | None = typer.Option(
        None, "--app-id", help="A GitHub App's id: keep the App (with --private-key)."
    ),
    private_key: Path | None = typer.Option(
        None, "--private-key", help="The GitHub App's private key: its .pem file."
    ),
    installation_id: int | None = typer.Option(
        None, "--installation-id", help="The App's installation (default: each repository's)."
    ),
    refresh_token_env: str | None = typer.Option(
        None,
        "--refresh-token-env",
        help="A GitLab OAuth grant: the variable holding its refresh token (the token is "
        "then its access token; golem refreshes it).",
    ),
    client_id: str | None = typer.Option(None, "--client-id", help="The OAuth application's id."),
    client_secret_env: str | None = typer.Option(
        None, "--client-secret-env", help="The variable holding the OAuth application's secret."
    ),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Keep a tenant's token, GitHub App or GitLab OAuth grant (replacing any): its runs
    use it, no other tenant's do."""
    from golem.cli.stores import using_store
    from golem.store import TokenCipher

    chosen = _forge(forge)
    token: ForgeSecret
    if app_id is not None:
        token = _app_key(chosen, app_id, private_key, installation_id)
    elif refresh_token_env is not None:
        if chosen != "gitlab":
            raise InvalidRequest(
                "an OAuth grant with --refresh-token-env is GitLab's: --forge gitlab"
            )
        token = _grant(_read_token(token_env), refresh_token_env, client_id, client_secret_env)
    else:
        token = _read_token(token_env)
    config = _config(config_file)
    cipher = TokenCipher.from_config(config)
    using_store(config, lambda store: store.credentials.put(chosen, token, cipher), tenant=tenant)
    kind = "App" if app_id is not None else "OAuth grant" if refresh_token_env else "token"
    say(f"{chosen} {kind} of tenant {tenant} set")


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


@credentials_app.command("ls")
def list_command(
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON."),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Which tenants have a token for which forge (never the tokens)."""
    from golem.cli.stores import using_store

    listed = using_store(_config(config_file), lambda store: store.credentials.all(), tenant=tenant)
    if json_output:
        say_json([c.model_dump() for c in listed])
        return
    table = Table("TENANT", "FORGE", "SET", box=None)
    for credential in listed:
        table.add_row(credential.tenant, credential.forge, _when(credential.updated))
    terminal().print(table)


@credentials_app.command("rm")
def remove_command(
    tenant: str = TENANT, forge: str = FORGE, config_file: Path | None = options.CONFIG
) -> None:
    """Forget a tenant's token."""
    from golem.cli.stores import using_store

    chosen = _forge(forge)
    config = _config(config_file)
    if not using_store(config, lambda store: store.credentials.delete(chosen), tenant=tenant):
        raise InvalidRequest(f"tenant {tenant!r} has no {chosen} token; see `golem credentials ls`")
    say(f"{chosen} token of tenant {tenant} deleted")


@credentials_app.command("new-key")
def new_key_command() -> None:
    """Print a new key for ``[server] credentials_key_env`` (to share among servers)."""
    from golem.store import new_key

    typer.echo(new_key())
