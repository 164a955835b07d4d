"""Which forge tokens a tenant's runs get: the tenant's own (GitHub's, GitLab's), from the
store; else the server's own tokens (``[forge.github] token_env``, ``[forge.gitlab]
token_env``), but only for tenants the configuration names (``[server]
shared_forge_tenants``; unset: the GitHub trigger's tenant alone); else none. One tenant's
runs never get another tenant's token."""

from __future__ import annotations

from golem.core.config import GolemConfig
from golem.core.errors import MissingForgeToken
from golem.forge import ForgeCredentials
from golem.store import ForgeName, Store, TokenCipher

__all__ = ["ForgeAccess"]

TOKEN_FORGES: tuple[ForgeName, ...] = ("github", "gitlab")
TITLES = {"github": "GitHub", "gitlab": "GitLab"}


class ForgeAccess:
    """The forge credentials of each tenant of one server."""

    def __init__(self, config: GolemConfig, store: Store) -> None:
        self.config = config
        self.store = store
        self.cipher = TokenCipher.from_config(config)

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
        own = {forge: await scoped.reveal_forge_token(forge, self.cipher) for forge in TOKEN_FORGES}
        if any(own.values()):
            return ForgeCredentials(
                github=own["github"],
                gitlab=own["gitlab"],
                source=f"tenant {tenant}'s stored token",
                host_git=False,
            )
        if self.shares_server_token(tenant):  # the server's own, with its git credentials
            return ForgeCredentials.from_config(self.config.forge)
        return ForgeCredentials(source=f"tenant {tenant} has none", host_git=False)

    async def require(self, tenant: str, forge: str, why: str) -> ForgeCredentials:
        """``tenant``'s tokens, when they hold one for ``forge`` (``github``, ``gitlab``;
        any other needs none); else MissingForgeToken saying how to give the tenant one
        (``why``: what needs it)."""
        credentials = await self.for_tenant(tenant)
        token = {"github": credentials.github, "gitlab": credentials.gitlab}.get(forge, "")
        if token is None:
            raise MissingForgeToken(
                f"{why} needs a {TITLES[forge]} token, and tenant {tenant!r} has none: set "
                f"one with PUT /v1/credentials/{forge} (a key of the tenant), or on the server "
                f"with `golem credentials set --tenant {tenant} --forge {forge}`; golem uses "
                "no other tenant's token, nor the server's unless server.shared_forge_tenants "
                "names the tenant"
            )
        return credentials
