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
    """A token for git's HTTPS remotes at one origin, as basic auth: GitHub's
    ``x-access-token``, GitLab's ``oauth2`` username."""

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

    ``source`` says where the tokens came from (for messages; empty: each forge's
    ``token_env``); ``host_git`` whether git may
    also use the host's own credentials (helpers, ssh keys, netrc): true for the host's own
    runs, false for a tenant's, whose git gets the tenant's token and nothing else."""

    github: str | None = field(default=None, repr=False)
    source: str = "the host's environment"
    host_git: bool = True
    gitlab: str | None = field(default=None, repr=False)

    @classmethod
    def from_config(cls, config: ForgeConfig) -> ForgeCredentials:
        """The tokens the host's environment holds (``[forge.github] token_env``,
        ``[forge.gitlab] token_env``)."""
        # No one source: each forge's messages name its own token_env.
        return cls(github=config.github.token(), gitlab=config.gitlab.token(), source="")

    def secrets(self) -> list[str]:
        """Every token, for masking."""
        return [token for token in (self.github, self.gitlab) if token]


def git_auth(
    config: ForgeConfig, remote_url: str, credentials: ForgeCredentials | None = None
) -> GitAuth | None:
    """The token git gets for ``remote_url``, chosen by the remote's host: GitHub's (from
    ``credentials``, by default the host's) for GitHub's host (``api_url``'s, or github.com
    for api.github.com), GitLab's (as ``oauth2``) for GitLab's (``base_url``'s); a token
    only when there is one and either that forge's ``token_for_git`` is set or the
    credentials may not fall back to the host's own (a tenant's). Another host gets no
    token (None), and the host's own credentials answer where allowed."""
    chosen = credentials or ForgeCredentials.from_config(config)
    forge = _forge_of(config, remote_url)
    if forge == "github":
        token, for_git, username = chosen.github, config.github.token_for_git, "x-access-token"
    elif forge == "gitlab":
        token, for_git, username = chosen.gitlab, config.gitlab.token_for_git, "oauth2"
    else:
        return None
    if token is None or not (for_git or not chosen.host_git):
        return None
    return GitAuth(token, remote_url, username)


def _forge_of(config: ForgeConfig, remote_url: str) -> str | None:
    """The forge whose host ``remote_url`` is on; where both forges are on one host (two
    ports of one machine), the one on its port too; None when none is, or it is unclear."""
    remote = urlsplit(remote_url)
    if remote.hostname is None:
        return None
    github = urlsplit(config.github.api_url)
    places = {
        "github": (config.github.git_host(), github.port),
        "gitlab": (config.gitlab.git_host(), urlsplit(config.gitlab.base_url).port),
    }
    on_host = [name for name, (host, _) in places.items() if host == remote.hostname]
    if len(on_host) > 1:
        on_host = [name for name in on_host if places[name][1] == remote.port]
    return on_host[0] if len(on_host) == 1 else None
