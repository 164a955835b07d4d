"""Which forge tokens a tenant's runs get: the tenant's own (GitHub's, GitLab's), from the
store; else the server's own tokens (``[forge.github] token_env`` or App, ``[forge.gitlab]
token_env``), but only for tenants the configuration names (``[server]
shared_forge_tenants``; unset: the GitHub trigger's tenant alone); else none. One tenant's
runs never get another tenant's token.

What a tenant keeps may be a token, a GitHub App's key or a GitLab OAuth grant; the token
sources made from them are shared by the tenant's runs on this server (one installation
token serves them all, one refresh of a grant at a time) until the tenant keeps another.
"""

from __future__ import annotations

import hashlib

from golem.core.config import GolemConfig
from golem.core.errors import MissingForgeToken
from golem.forge import ForgeCredentials
from golem.forge.tokens import StaticToken, TokenSource
from golem.store import AppKey, ForgeName, ForgeSecret, OAuthGrant, Store, TokenCipher

__all__ = ["ForgeAccess"]

TOKEN_FORGES: tuple[ForgeName, ...] = ("github", "gitlab")
TITLES = {"github": "GitHub", "gitlab": "GitLab"}


class ForgeAccess:
    """The forge credentials of each tenant of one server."""

    def __init__(self, config: GolemConfig, store: Store) -> None:
        self.config = config
        self.store = store
        self.cipher = TokenCipher.from_config(config)
        self._sources: dict[tuple[str, str], tuple[str, TokenSource]] = {}
        self._server: ForgeCredentials | None = None

    def shares_server_token(self, tenant: str) -> bool:
        """Whether ``tenant`` may use the server's own token when it has none."""
        server = self.config.server
        allowed = server.shared_forge_tenants
        triggers = [server.github.tenant, server.gitlab.tenant]
        return tenant in (allowed if allowed is not None else triggers)

    async def for_tenant(self, tenant: str) -> ForgeCredentials:
        """The tokens ``tenant``'s runs use (CredentialsKeyError when a stored one cannot
        be opened: it is kept, and the error says which key is needed). A tenant with a
        token of its own gets its own tokens only, never the server's beside them."""
        scoped = self.store.for_tenant(tenant)
        own = {forge: await scoped.credentials.reveal(forge, self.cipher) for forge in TOKEN_FORGES}
        if any(own.values()):
            return ForgeCredentials(
                github=self._source(tenant, "github", own["github"]),
                gitlab=self._source(tenant, "gitlab", own["gitlab"]),
                source=f"tenant {tenant}'s stored token",
                host_git=False,
            )
        if self.shares_server_token(tenant):  # the server's own, with its git credentials
            if self._server is None:
                self._server = ForgeCredentials.from_config(
                    self.config.forge, self.config.state_dir
                )
            return self._server
        return ForgeCredentials(source=f"tenant {tenant} has none", host_git=False)

    def _source(
        self, tenant: str, forge: ForgeName, kept: ForgeSecret | None
    ) -> TokenSource | None:
        """The token source of what ``tenant`` keeps for ``forge``: the one its runs share
        already, unless the tenant has kept another credential since."""
        if kept is None:
            return None
        identity = _identity(kept)
        shared = self._sources.get((tenant, forge))
        if shared is not None and shared[0] == identity:
            return shared[1]
        made = self._make(tenant, forge, kept)
        self._sources[(tenant, forge)] = (identity, made)
        return made

    def _make(self, tenant: str, forge: ForgeName, kept: ForgeSecret) -> TokenSource:
        where = f"tenant {tenant}'s stored {TITLES[forge]} "
        if isinstance(kept, str):
            return StaticToken(kept, where + "token")
        forges = self.config.forge
        if isinstance(kept, AppKey):
            from golem.forge.github_app import GitHubAppTokens  # noqa: PLC0415

            return GitHubAppTokens(
                kept.app_id,
                kept.private_key,
                api_url=forges.github.api_url,
                installation_id=kept.installation_id,
                timeout=forges.github.timeout,
                source=where + f"App {kept.app_id}",
                max_retries=forges.github.max_retries,
            )
        from golem.forge.gitlab_oauth import GitLabOAuthTokens, StoredGrant  # noqa: PLC0415

        keeper = StoredGrant(self.store.for_tenant(tenant), self.cipher, tenant)
        return GitLabOAuthTokens(
            kept,
            base_url=forges.gitlab.base_url,
            keeper=keeper,
            source=where + "OAuth grant",
            timeout=forges.gitlab.timeout,
            max_retries=forges.gitlab.max_retries,
        )

    async def require(self, tenant: str, forge: str, why: str) -> ForgeCredentials:
        """``tenant``'s tokens, when they hold one for ``forge`` (``github``, ``gitlab``;
        any other needs none); else MissingForgeToken saying how to give the tenant one
        (``why``: what needs it)."""
        credentials = await self.for_tenant(tenant)
        tokens = {"github": credentials.github_tokens, "gitlab": credentials.gitlab_tokens}
        token = tokens.get(forge, "")
        if token is None:
            raise MissingForgeToken(
                f"{why} needs a {TITLES[forge]} token, and tenant {tenant!r} has none: set "
                f"one with PUT /v1/credentials/{forge} (a key of the tenant), or on the server "
                f"with `golem credentials set --tenant {tenant} --forge {forge}`; golem uses "
                "no other tenant's token, nor the server's unless server.shared_forge_tenants "
                "names the tenant"
            )
        return credentials


def _identity(kept: ForgeSecret) -> str:
    """What tells one kept credential from another: a token, an App's key and
    installation, an OAuth application (a refreshed grant is the same grant)."""
    if isinstance(kept, OAuthGrant):
        text = f"oauth:{kept.client_id}:{kept.client_secret}"
    elif isinstance(kept, AppKey):
        text = f"app:{kept.app_id}:{kept.installation_id}:{kept.private_key}"
    else:
        text = f"token:{kept}"
    return hashlib.sha256(text.encode()).hexdigest()
