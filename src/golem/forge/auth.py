"""Tokens on the host: where a run's come from, and how git gets one without it reaching
argv, a URL or a message.

``ForgeCredentials`` holds a run's ``TokenSource`` per forge (``golem.forge.tokens``): a
token as it is, a GitHub App's installation tokens, a GitLab OAuth grant. A ``GitLogin``
asks its source for the token of each git command (never one for a run's lifetime); the
``GitAuth`` it gets hands git an ``http.<origin>.extraHeader`` through ``GIT_CONFIG_*``
environment variables, scoped to the origin (scheme, host, port) of the remote it was made
for: if the remote is later pointed elsewhere (the box can write ``.git/config``), git does
not send the header there. ``mask`` removes a token, and the header value that carries it,
from any text.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from golem.core.errors import ConfigError
from golem.core.masking import mask_text
from golem.forge.config import ForgeConfig, GitHubConfig, GitLabConfig
from golem.forge.tokens import StaticToken, TokenSource
from golem.store import OAuthGrant

__all__ = [
    "GRANT_FILE",
    "MASK",
    "ForgeCredentials",
    "GitAuth",
    "GitLogin",
    "git_auth",
    "mask",
    "origin_of",
]

GRANT_FILE = "gitlab-oauth.json"
"""The host's GitLab OAuth grant, in the state directory, after its first refresh."""

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
        _check_sendable(self.url)

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


def _check_sendable(url: str) -> None:
    """ConfigError unless a token may be sent to ``url``: HTTPS, or HTTP to loopback."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return
    if parts.scheme == "http" and _is_loopback(parts.hostname or ""):
        return
    raise ConfigError(
        f"a token is only sent over HTTPS (or plain HTTP to this machine), not to "
        f"{origin_of(url) if parts.scheme else url!r}: use the remote's https:// "
        "URL, or drop the token and let the host's git credentials (ssh) do it"
    )


@dataclass(frozen=True)
class GitLogin:
    """Where git's token for the remote ``url`` comes from: ``tokens`` is asked for the
    token of each command (``auth``), and for a fresh one when the remote refused it
    (``refreshed``). ``repo`` (``owner/name``) is the repository, for a GitHub App's
    installation."""

    tokens: TokenSource
    url: str
    username: str = "x-access-token"
    repo: str | None = None

    def __post_init__(self) -> None:
        _check_sendable(self.url)

    @classmethod
    def of(cls, auth: GitAuth) -> GitLogin:
        """The login that always answers ``auth``'s token."""
        return cls(StaticToken(auth.token, "the token given"), auth.url, auth.username)

    async def auth(self) -> GitAuth:
        """The token to send now, for this remote's origin."""
        return GitAuth(await self.tokens.token(self.repo), self.url, self.username)

    async def refreshed(self, stale: GitAuth) -> GitAuth | None:
        """A fresh token in place of ``stale``, which the remote refused (None: there is
        none to have)."""
        fresh = await self.tokens.refresh(stale.token, self.repo)
        return None if fresh is None else GitAuth(fresh, self.url, self.username)


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***`` (longest first, so that a secret
    containing another is masked whole): golem's one masker, ``golem.core.masking``."""
    return mask_text(text, secrets)


@dataclass(frozen=True)
class ForgeCredentials:
    """Where the forge tokens of one run come from. ``golem run`` takes the host's
    (``from_config``); a server gives each run its tenant's, so that one tenant's key
    never reaches another's repositories. A token given as a string is used as it is.

    ``source`` says where the tokens came from (for messages; empty: each source's own
    word); ``host_git`` whether git may
    also use the host's own credentials (helpers, ssh keys, netrc): true for the host's own
    runs, false for a tenant's, whose git gets the tenant's token and nothing else."""

    github: TokenSource | str | None = field(default=None, repr=False)
    source: str = "the host's environment"
    host_git: bool = True
    gitlab: TokenSource | str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("github", "gitlab"):
            value = getattr(self, name)
            if isinstance(value, str):
                token = StaticToken(value, self.source) if value else None
                object.__setattr__(self, name, token)

    @property
    def github_tokens(self) -> TokenSource | None:
        """GitHub's token source (None: no token)."""
        assert not isinstance(self.github, str)  # made a StaticToken on construction
        return self.github

    @property
    def gitlab_tokens(self) -> TokenSource | None:
        """GitLab's token source (None: no token)."""
        assert not isinstance(self.gitlab, str)
        return self.gitlab

    @classmethod
    def from_config(cls, config: ForgeConfig, state_dir: Path | None = None) -> ForgeCredentials:
        """The host's own: a GitHub App (``[forge.github] app_id``, ``private_key``) or the
        token ``token_env`` holds; GitLab's token, an OAuth grant when ``refresh_token_env``
        is set (its refreshed grants kept in ``state_dir``, else in this process only)."""
        # No one source: each forge's messages name their own.
        return cls(
            github=github_source(config.github),
            gitlab=gitlab_source(config.gitlab, state_dir),
            source="",
        )

    def secrets(self) -> list[str]:
        """Every token handed out so far and every secret held, for masking."""
        sources = (self.github_tokens, self.gitlab_tokens)
        return [secret for tokens in sources if tokens is not None for secret in tokens.secrets()]

    def on_minted(self, learn: Callable[[str], None]) -> None:
        """Call ``learn`` with each token minted from now on (a run's masker)."""
        for tokens in (self.github_tokens, self.gitlab_tokens):
            if tokens is not None:
                tokens.on_minted(learn)


def github_source(config: GitHubConfig) -> TokenSource | None:
    """The host's GitHub tokens: the App's installation tokens, else ``token_env``'s."""
    if config.app_id is not None:
        from golem.forge.github_app import GitHubAppTokens  # noqa: PLC0415 (PyJWT when used)

        where = "[forge.github] private_key"
        try:
            key = config.app_key()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the GitHub App's private key ({where}: {exc.strerror}): give "
                "the path of the .pem file the App's settings generated"
            ) from exc
        assert key is not None  # the config holds app_id and private_key together
        return GitHubAppTokens(
            config.app_id,
            key,
            api_url=config.api_url,
            installation_id=config.installation_id,
            source=f"GitHub App {config.app_id} ({where})",
            timeout=config.timeout,
            max_retries=config.max_retries,
        )
    token = config.token()
    return StaticToken(token, f"${config.token_env}") if token else None


def gitlab_source(config: GitLabConfig, state_dir: Path | None) -> TokenSource | None:
    """The host's GitLab tokens: an OAuth grant when ``refresh_token_env`` holds a refresh
    token, else ``token_env``'s token."""
    token, refresh = config.token(), config.refresh_token()
    if refresh is None:
        return StaticToken(token, f"${config.token_env}") if token else None
    from golem.forge.gitlab_oauth import FileGrant, GitLabOAuthTokens  # noqa: PLC0415

    seed = OAuthGrant(
        access_token=token or "",
        refresh_token=refresh,
        client_id=config.oauth_client_id,
        client_secret=config.client_secret(),
    )
    keeper = FileGrant(state_dir / GRANT_FILE, seed) if state_dir is not None else None
    return GitLabOAuthTokens(
        seed,
        base_url=config.base_url,
        keeper=keeper,
        timeout=config.timeout,
        source=f"the GitLab OAuth grant (${config.token_env}, ${config.refresh_token_env})",
        max_retries=config.max_retries,
    )


def git_auth(
    config: ForgeConfig, remote_url: str, credentials: ForgeCredentials | None = None
) -> GitLogin | None:
    """Where git's token for ``remote_url`` comes from, chosen by the remote's host:
    GitHub's (from ``credentials``, by default the host's) for GitHub's host (``api_url``'s,
    or github.com for api.github.com), GitLab's (as ``oauth2``) for GitLab's
    (``base_url``'s); a token only when there is one and either that forge's
    ``token_for_git`` is set, or the credentials may not fall back to the host's own (a
    tenant's), or they are minted (a GitHub App's, a GitLab OAuth grant's: the host's git
    has none of those). Another host gets no token (None), and the host's own credentials
    answer where allowed."""
    chosen = credentials or ForgeCredentials.from_config(config)
    forge = _forge_of(config, remote_url)
    if forge == "github":
        tokens, for_git, username = (
            chosen.github_tokens,
            config.github.token_for_git,
            "x-access-token",
        )
    elif forge == "gitlab":
        tokens, for_git, username = chosen.gitlab_tokens, config.gitlab.token_for_git, "oauth2"
    else:
        return None
    minted = tokens is not None and not isinstance(tokens, StaticToken)
    if tokens is None or not (for_git or minted or not chosen.host_git):
        return None
    return GitLogin(tokens, remote_url, username, repo=_repo_of(remote_url))


def _repo_of(remote_url: str) -> str | None:
    """``owner/name`` of a remote URL whose path is ``/owner/name[.git]`` (None else)."""
    parts = urlsplit(remote_url).path.strip("/").removesuffix(".git").split("/")
    return "/".join(parts) if len(parts) == 2 and all(parts) else None


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
