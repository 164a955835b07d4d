"""Choosing a forge by name; the concrete class is imported when chosen."""

from __future__ import annotations

from golem.core.errors import ConfigError
from golem.forge.auth import ForgeCredentials
from golem.forge.config import ForgeConfig
from golem.forge.protocol import Forge
from golem.store import Store

__all__ = ["FORGES", "make_forge"]

FORGES = ("github", "gitlab", "local")


def make_forge(
    name: str | None,
    config: ForgeConfig,
    store: Store | None = None,
    credentials: ForgeCredentials | None = None,
) -> Forge:
    """The forge called ``name`` (None: ``config.provider``): ``github`` or ``gitlab`` (its
    token from ``credentials``, by default the host's ``token_env`` of ``config.github`` or
    ``config.gitlab``) or ``local`` (pull requests kept in ``store``)."""
    chosen = name or config.provider
    if chosen == "github":
        from golem.forge.github import GitHubForge  # noqa: PLC0415 (httpx only when chosen)

        chosen_credentials = credentials or ForgeCredentials.from_config(config)
        return GitHubForge(config.github, credentials=chosen_credentials, labels=config.labels)
    if chosen == "gitlab":
        from golem.forge.gitlab import GitLabForge  # noqa: PLC0415 (httpx only when chosen)

        chosen_credentials = credentials or ForgeCredentials.from_config(config)
        return GitLabForge(config.gitlab, credentials=chosen_credentials, labels=config.labels)
    if chosen == "local":
        if store is None:
            raise ConfigError(
                "the local forge keeps pull requests in golem's store: give make_forge one "
                "(golem.store.MemoryStore for tests and demos)"
            )
        from golem.forge.local import LocalForge  # noqa: PLC0415

        return LocalForge(store, labels=config.labels)
    raise ConfigError(f"no forge called {chosen!r}: choose one of {', '.join(FORGES)}")
