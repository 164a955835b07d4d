"""Tokens on the host: how git gets one without it reaching argv, a URL or a message.

A ``GitAuth`` hands git an ``http.<origin>.extraHeader`` through ``GIT_CONFIG_*``
environment variables, scoped to the origin (scheme, host, port) of the remote it was made
for: if the remote is later pointed elsewhere (the box can write ``.git/config``), git does
not send the header there. ``mask`` removes a token, and the header value that carries it,
from any text.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from golem.core.errors import ConfigError
from golem.core.masking import mask_text
from golem.forge.config import ForgeConfig

__all__ = ["MASK", "ForgeCredentials", "GitAuth", "git_auth", "mask", "origin_of"]

MASK = "***"

LOOPBACK_NAMES = frozenset({"localhost"})


def origin_of(url: str) -> str:
    """``scheme://host[:port]/`` of an HTTP(S) URL, without any user or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}/"


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class GitAuth:
    """A token for git's HTTPS remotes at one origin (GitHub's ``x-access-token`` basic
    auth, which every major forge accepts for its tokens)."""

    token: str = field(repr=False)
    url: str
    """The remote (or any URL on its origin) the token is for."""
    username: str = "x-access-token"

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme == "https":
            return
        if parts.scheme == "http" and _is_loopback(parts.hostname or ""):
            return
        raise ConfigError(
            f"a token is only sent over HTTPS (or plain HTTP to this machine), not to "
            f"{origin_of(self.url) if parts.scheme else self.url!r}: use the remote's https:// "
            "URL, or drop the token and let the host's git credentials (ssh) do it"
        )

    @property
    def header(self) -> str:
        """The ``Authorization`` header line git sends."""
        pair = f"{self.username}:{self.token}".encode()
        return f"Authorization: Basic {base64.b64encode(pair).decode()}"

    def git_config(self) -> list[tuple[str, str]]:
        """The config entries that make git send the token to this origin only."""
        return [(f"http.{origin_of(self.url)}.extraHeader", self.header)]

    def secrets(self) -> list[str]:
        """Every form of the token that could show up in git's output."""
        return [self.token, self.header.split(" ", 2)[2]]


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***`` (longest first, so that a secret
    containing another is masked whole): golem's one masker, ``golem.core.masking``."""
    return mask_text(text, secrets)


@dataclass(frozen=True)
class ForgeCredentials:
    """The forge tokens one run may use. ``golem run`` takes the host's
    (``from_config``); a server gives each run its tenant's, so that one tenant's key
    never reaches another's repositories.

    ``source`` says where the token came from (for messages); ``host_git`` whether git may
    also use the host's own credentials (helpers, ssh keys, netrc): true for the host's own
    runs, false for a tenant's, whose git gets the tenant's token and nothing else."""

    github: str | None = field(default=None, repr=False)
    source: str = "the host's environment"
    host_git: bool = True

    @classmethod
    def from_config(cls, config: ForgeConfig) -> ForgeCredentials:
        """The tokens the host's environment holds (``[forge.github] token_env``)."""
        return cls(github=config.github.token(), source=f"${config.github.token_env}")

    def secrets(self) -> list[str]:
        """Every token, for masking."""
        return [token for token in (self.github,) if token]


def git_auth(
    config: ForgeConfig, remote_url: str, credentials: ForgeCredentials | None = None
) -> GitAuth | None:
    """The token git gets for ``remote_url``: GitHub's (from ``credentials``, by default the
    host's), when there is a token, the remote is on GitHub's host (``api_url``'s, or
    github.com for api.github.com) and either ``token_for_git`` is set or the credentials
    may not fall back to the host's own (a tenant's); else None, and the host's own
    credentials answer where allowed."""
    chosen = credentials or ForgeCredentials.from_config(config)
    token = chosen.github
    if token is None or not (config.github.token_for_git or not chosen.host_git):
        return None
    if urlsplit(remote_url).hostname != config.github.git_host():
        return None
    return GitAuth(token, remote_url)
