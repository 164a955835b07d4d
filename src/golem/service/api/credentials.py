"""Forge credentials over HTTP: a tenant sets, lists and deletes its own forge tokens.

A token is write-only: it is sealed in the store and never answered, logged or put in an
event. A key acts for its own tenant; only an admin key may name another (``tenant=``).
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from golem.core.errors import Problem
from golem.service.api.deps import Caller, State
from golem.service.keys import Principal
from golem.store import ForgeCredential, ForgeName

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
    """A forge token to keep for the tenant (write-only: never shown again)."""

    model_config = ConfigDict(extra="forbid")

    token: SecretStr = Field(
        min_length=1,
        max_length=2048,
        description="The token, e.g. a GitHub fine-grained personal access token or a "
        "GitLab personal, project or group access token (scope api).",
    )


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
    return await state.store.for_tenant(_tenant(principal, tenant)).list_forge_credentials()


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
    token = body.token.get_secret_value()
    kept = await store.set_forge_token(forge, token, state.forge_access.cipher)
    log.info("tenant %s: %s token set (key %s)", target, forge, principal.key_id)
    return kept


@router.delete("/credentials/{forge}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_credential(
    forge: ForgeName, principal: Caller, state: State, tenant: TenantParameter = None
) -> None:
    """Forget the tenant's token for ``forge``."""
    target = _tenant(principal, tenant)
    if not await state.store.for_tenant(target).delete_forge_token(forge):
        raise Problem(404, f"tenant {target!r} has no {forge} token")
    log.info("tenant %s: %s token deleted (key %s)", target, forge, principal.key_id)
