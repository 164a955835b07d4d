"""A GitHubForge on the loopback GitHub, with the token it wants."""

from __future__ import annotations

from golem.forge.config import GitHubConfig
from golem.forge.github import GitHubForge
from golem.testing.github_server import GitHubServer

TOKEN = "ghp_golemForgeTest0123456789abcdef"  # noqa: S105 (a test token)
TOKEN_ENV = "GOLEM_TEST_GITHUB_TOKEN"  # noqa: S105 (a variable's name)
REPO = "octo/demo"


def make(server: GitHubServer, *, labels: tuple[str, ...] = (), **kwargs: object) -> GitHubForge:
    """A forge on ``server`` that retries twice without waiting."""
    config = GitHubConfig(api_url=server.api_url, token_env=TOKEN_ENV, max_retries=2)
    return GitHubForge(config, labels=labels, backoff=0, **kwargs)  # type: ignore[arg-type]
