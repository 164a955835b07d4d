"""`golem serve` and `golem keys`: the HTTP API server, and its API keys."""

from __future__ import annotations

import ctypes
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import say, say_json, terminal
from golem.core.errors import ConfigError, InvalidRequest

if TYPE_CHECKING:
    from golem.core.config import GolemConfig
    from golem.sandbox import Engine
    from golem.service.keys import KeyStore

__all__ = ["keys_app", "serve_command"]

# Idle connections stay open this long: longer than clients keep them for reuse (httpx, so
# RemoteEngine: 5 s, uvicorn's own default too). With equal timeouts a client could send a
# call on a connection the server is closing, and lose it to a ReadError.
KEEP_ALIVE_SECONDS = 75
T = TypeVar("T")


def _load(config_file: Path | None) -> GolemConfig:
    from golem.core.config import load_config

    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file {config_file} does not exist")
    return load_config(files=[config_file] if config_file is not None else None)


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound now so that a busy port is a clear error and port 0
    picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted sockets only then (else
    # each small answer waits ~40 ms for the client's delayed ACK).
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}; choose another with --port "
            "or [server] port"
        ) from exc
    listener.listen(2048)
    listener.set_inheritable(True)
    return listener


M_ARENA_MAX = -8  # glibc's mallopt parameter
MALLOC_ARENAS = 2


def cap_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Let glibc's malloc keep at most ``arenas`` arenas (unless MALLOC_ARENA_MAX says).
    Left alone, each worker thread (``asyncio.to_thread``, the store's) that allocates
    while the others hold theirs gets an arena of its own, up to 8 a core, and each
    fragments: the server's RSS grew about 2 MB a minute under load in those arenas and
    stayed flat with one (docs/performance.md, Soak). Whether it applied (only on glibc)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))


def engine_maker(config: GolemConfig) -> Callable[[GolemConfig], Engine] | None:
    """What makes the server's engine: a Ray cluster's when ``[cluster] ray_address`` is
    set (golem.cluster, and Ray, imported only then; the store must be PostgreSQL), else
    None (this machine's)."""
    if config.cluster.ray_address is None:
        return None
    try:
        from golem.cluster import ClusterEngine  # Ray only when asked for
    except ImportError as exc:
        raise ConfigError(
            f"[cluster] ray_address is set but Ray is not installed ({exc}): "
            "pip install 'golem[ray]'"
        ) from exc
    if not (config.database_url or "").startswith("postgresql"):
        raise ConfigError(
            "[cluster] ray_address needs golem's store in PostgreSQL, which the control plane "
            "and every node reach (the queue, and the runs the nodes carry): set "
            'database_url = "postgresql://..." (or GOLEM_DATABASE_URL); a SQLite file is '
            "one machine's alone"
        )
    return ClusterEngine


CLUSTER_SESSIONS = 1_000_000
"""``[server] max_sessions`` of a control plane on a Ray cluster, unless set: the cluster's
box slots are its limit (a full cluster queues sessions in Ray)."""


def cluster_limits(config: GolemConfig) -> GolemConfig:
    """``config`` as a control plane serves it: on a Ray cluster (``[cluster]
    ray_address``) the server's own ``max_sessions`` is lifted unless set explicitly, so
    that Ray's slots, not one machine's default, bound the sessions (the roles' per-tenant
    ``max_sessions`` stay)."""
    server = config.server
    if config.cluster.ray_address is None or "max_sessions" in server.model_fields_set:
        return config
    lifted = server.model_copy(update={"max_sessions": CLUSTER_SESSIONS})
    return config.model_copy(update={"server": lifted})


def serve_command(
    host: str | None = typer.Option(None, "--host", help="Address (default: [server] host)."),
    port: int | None = typer.Option(
        None, "--port", help="Port (default: [server] port; 0 picks a free one)."
    ),
    config_file: Path | None = options.CONFIG,
) -> None:
    """Serve the HTTP API, the job queue and the dashboard until stopped."""
    from golem.core.imports import collector_paused

    with collector_paused():
        import uvicorn

        from golem.service import server_log_config
        from golem.service.app import create_app
        from golem.service.limits import ws_max_size
        from golem.service.slow_clients import ReadLimits, guarded_protocol

    cap_malloc_arenas()  # before the server starts its threads
    config = cluster_limits(_load(config_file))
    make_engine = engine_maker(config)  # before listening: a missing Ray says so first
    server = config.server
    listener = _listen(host or server.host, server.port if port is None else port)
    bound_host, bound_port = listener.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    terminal(stderr=True).print(
        f"golem serve: http://{shown}:{bound_port} (API /v1, docs /docs, dashboard /)",
        highlight=False,
    )
    settings = uvicorn.Config(
        create_app(config, make_engine),
        log_config=server_log_config(),
        log_level="info",
        ws="websockets-sansio",
        ws_max_size=ws_max_size(config),  # each role's own cap is checked per message
        timeout_graceful_shutdown=10,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        http=guarded_protocol(
            ReadLimits(server.header_timeout, server.body_timeout, server.body_min_rate)
        ),
    )
    uvicorn.Server(settings).run(sockets=[listener])


keys_app = typer.Typer(
    rich_markup_mode=None, help="API keys of the server (run on the server's host)."
)


def _with_keys(work: Callable[[KeyStore], Awaitable[T]]) -> T:
    from golem.cli.stores import using_store
    from golem.core.config import load_config
    from golem.service.keys import KeyStore

    config = load_config()
    return using_store(config, lambda store: work(KeyStore(store, config.server.admin_key_env)))


@keys_app.command("create")
def create_command(
    tenant: str = typer.Option(..., "--tenant", help="The tenant the key acts for."),
    role: str = typer.Option("user", "--role", help="user, trusted or admin."),
    name: str = typer.Option("", "--name", help="What the key is for."),
) -> None:
    """Make a key; it is printed once and stored only as a hash."""
    if role not in ("user", "trusted", "admin"):
        raise InvalidRequest(f"--role {role!r}: choose user, trusted or admin")
    key, plaintext = _with_keys(lambda keys: keys.create(tenant, role, name))  # type: ignore[arg-type]
    typer.echo(plaintext)
    terminal(stderr=True).print(
        f"key {key.id} for tenant {key.tenant} ({key.role}); keep it: it is not shown again"
    )


@keys_app.command("ls")
def list_command(json_output: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every key (never their secrets)."""
    keys = _with_keys(lambda keys: keys.list())
    if json_output:
        say_json([k.model_dump() for k in keys])
        return
    table = Table("ID", "TENANT", "ROLE", "NAME", "REVOKED", box=None)
    for key in keys:
        table.add_row(key.id, key.tenant, key.role, key.name, "yes" if key.revoked else "")
    terminal().print(table)


@keys_app.command("revoke")
def revoke_command(key_id: str = typer.Argument(...)) -> None:
    """Revoke a key."""
    if not _with_keys(lambda keys: keys.revoke(key_id)):
        raise InvalidRequest(f"no key {key_id!r}; see `golem keys ls`")
    say(f"revoked {key_id}")
