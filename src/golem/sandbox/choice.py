"""Which engine a configuration names: ``make_engine``, the one place it is chosen."""

from __future__ import annotations

import os

from golem.core.config import GolemConfig, load_config
from golem.core.errors import ConfigError
from golem.sandbox.contracts import Engine
from golem.sandbox.engine import LocalEngine

__all__ = ["make_engine", "server_of"]


def make_engine(config: GolemConfig | None = None) -> Engine:
    """The engine the configuration names: a server's when ``[remote] url`` is set (its key
    from ``[remote] key_env``), else this machine's."""
    settings = config or load_config()
    if settings.remote.url is None:
        return LocalEngine(settings)
    # a server's client (httpx, its frames) loads only for a server's engine
    from golem.sandbox.remote.engine import RemoteEngine  # noqa: PLC0415

    url, key = server_of(settings)
    return RemoteEngine(url, key, config=settings, timeout=settings.remote.timeout)


def server_of(config: GolemConfig) -> tuple[str, str]:
    """The golem server ``[remote]`` names, and the API key its ``key_env`` holds."""
    remote = config.remote
    if remote.url is None:
        raise ConfigError(
            "no golem server is configured: set [remote] url (or GOLEM_REMOTE__URL) to one, "
            "e.g. http://golem:8765"
        )
    key = os.environ.get(remote.key_env)
    if not key:
        raise ConfigError(
            f"[remote] url is {remote.url} but {remote.key_env} holds no API key; export it"
        )
    return remote.url, key
