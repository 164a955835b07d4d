"""Forge credentials over HTTP: a tenant sets, lists and deletes its own forge tokens.

A credential is a token, a GitHub App (its id and private key: golem mints its
installation tokens per use) or a GitLab OAuth grant (an access token with its refresh
token: golem refreshes it). It is write-only: sealed in the store and never answered,
logged or put in an event. A key acts for its own tenant; only an admin key may name
another (``tenant=``).
"""

from __future__ import annotations

import logging
import time
from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from golem.core.errors import ForgeCredentialsRefused, Problem
from golem.forge.github_app import check_app_key
from golem.service.api.deps import Caller, State
from golem.service.keys import Principal
from golem.store import AppKey, ForgeCredential, ForgeName, ForgeSecret, OAuthGrant

__all__ = ["TokenBody", "router"]

router = APIRouter(prefix="/v1", tags=["credentials"])
log = logging.getLogger("golem.service.credentials")

TenantParameter = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="Another tenant's (admin keys only); default: the key's own.",
    ),
]


class TokenBody(BaseModel):
    """A forge credential to keep for the tenant (write-only: never shown again): a
    ``token``; or a GitHub App (``app_id``, ``private_key``, optionally
    ``installation_id``); or a GitLab OAuth grant (``token`` and ``refresh_token``, with
    ``client_id``, ``client_secret`` where the OAuth application needs them)."""

    model_config = ConfigDict(extra="forbid")

    token: SecretStr | None = Field(
        None,
        min_length=1,
        max_length=2048,
        description="The token, e.g. a GitHub fine-grained personal access token or a "
        "GitLab personal, project or group access token (scope api); with refresh_token, "
        "a GitLab OAuth access token.",
    )
    app_id: int | None = Field(None, gt=0, description="A GitHub App's id.")
    private_key: SecretStr | None = Field(
        None, min_length=1, max_length=16384, description="The GitHub App's private key (PEM)."
    )
    installation_id: int | None = Field(
        None, gt=0, description="The App's installation; unset: each run's repository's."
    )
    refresh_token: SecretStr | None = Field(
        None, min_length=1, max_length=2048, description="A GitLab OAuth refresh token."
    )
    expires_in: int | None = Field(
        None, gt=0, description="Seconds the OAuth access token has left (unset: unknown)."
    )
    client_id: str | None = Field(
        None, min_length=1, max_length=256, description="The OAuth application's id."
    )
    client_secret: SecretStr | None = Field(
        None, min_length=1, max_length=2048, description="The OAuth application's secret."
    )

    def secret(self, forge: ForgeName) -> ForgeSecret:
        """What to keep; a 422 that names the fields when the body is none of the forms."""
        given = {name for name, value in self if value is not None}
        app = {"app_id", "private_key", "installation_id"}
        oauth = {"token", "refresh_token", "expires_in", "client_id", "client_secret"}
        if given == {"token"}:
            return _plain(self.token)
        if forge == "github" and {"app_id", "private_key"} <= given <= app:
            return self._app()
        if forge == "gitlab" and {"refresh_token"} <= given <= oauth:
            return self._grant()
        raise Problem(
            422,
            f"a {forge} credential is a token alone"
            + (
                ", or a GitHub App: app_id and private_key (installation_id optional)"
                if forge == "github"
                else ", or an OAuth grant: refresh_token (token, expires_in, client_id and "
                "client_secret as the OAuth application needs)"
            )
            + f"; this body gave {', '.join(sorted(given)) or 'nothing'}",
        )

    def _app(self) -> AppKey:
        assert self.app_id is not None
        assert self.private_key is not None
        pem = self.private_key.get_secret_value()
        try:
            check_app_key(pem, "private_key")
        except ForgeCredentialsRefused as exc:
            raise Problem(422, exc.message) from None
        return AppKey(app_id=self.app_id, private_key=pem, installation_id=self.installation_id)

    def _grant(self) -> OAuthGrant:
        assert self.refresh_token is not None
        try:
            return OAuthGrant(
                access_token=_plain(self.token) if self.token is not None else "",
                refresh_token=_plain(self.refresh_token),
                expires_at=time.time() + self.expires_in if self.expires_in else None,
                client_id=self.client_id,
                client_secret=_plain(self.client_secret) if self.client_secret else None,
            )
        except ValueError:
            raise Problem(422, "the OAuth grant's fields cannot be kept: check them") from None


def _plain(value: SecretStr | None) -> str:
    assert value is not None
    return value.get_secret_value()


def _tenant(principal: Principal, tenant: str | None) -> str:
    """The tenant a request acts on: the key's own, or (admin only) the one it names."""
    if tenant is None or tenant == principal.tenant:
        return principal.tenant
    if principal.role != "admin":
        raise Problem(403, "a key acts for its own tenant only: drop tenant=, or use an admin key")
    return tenant


@router.get("/credentials")
async def list_credentials(
    principal: Caller, state: State, tenant: TenantParameter = None
) -> list[ForgeCredential]:
    """Which forges the tenant has a token for, and when it was set (never the token)."""
    return await state.store.for_tenant(_tenant(principal, tenant)).credentials.all()


@router.put("/credentials/{forge}")
async def set_credential(
    forge: ForgeName,
    body: TokenBody,
    principal: Caller,
    state: State,
    tenant: TenantParameter = None,
) -> ForgeCredential:
    """Keep the tenant's token for ``forge`` (replacing any): the tenant's runs use it, and
    no other tenant's run ever does."""
    target = _tenant(principal, tenant)
    store = state.store.for_tenant(target)
    kept = await store.credentials.put(forge, body.secret(forge), state.forge_access.cipher)
    log.info("tenant %s: %s token set (key %s)", target, forge, principal.key_id)
    return kept


@router.delete("/credentials/{forge}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_credential(
    forge: ForgeName, principal: Caller, state: State, tenant: TenantParameter = None
) -> None:
    """Forget the tenant's token for ``forge``."""
    target = _tenant(principal, tenant)
    if not await state.store.for_tenant(target).credentials.delete(forge):
        raise Problem(404, f"tenant {target!r} has no {forge} token")
    log.info("tenant %s: %s token deleted (key %s)", target, forge, principal.key_id)
