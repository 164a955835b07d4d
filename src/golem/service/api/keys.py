"""API keys over HTTP (admin only): create one for a tenant and role, list, revoke."""

from __future__ import annotations

from fastapi import APIRouter, status
from pydantic import BaseModel, ConfigDict, Field

from golem.core.errors import Problem
from golem.service.api.deps import Admin, State
from golem.store import ApiKeyRecord, Role

__all__ = ["KeyCreate", "KeyCreated", "router"]

router = APIRouter(prefix="/v1", tags=["keys"])


class KeyCreate(BaseModel):
    """A key to make."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(min_length=1, max_length=64)
    role: Role = "user"
    name: str = Field("", max_length=200)


class KeyCreated(ApiKeyRecord):
    """A new key, with its plaintext: shown this once, stored only as a hash."""

    key: str


@router.post("/keys", status_code=status.HTTP_201_CREATED)
async def create_key(body: KeyCreate, _admin: Admin, state: State) -> KeyCreated:
    """Make a key for a tenant."""
    key, plaintext = await state.keys.create(body.tenant, body.role, body.name)
    return KeyCreated(**key.model_dump(), key=plaintext)


@router.get("/keys")
async def list_keys(_admin: Admin, state: State) -> list[ApiKeyRecord]:
    """Every key (never their secrets)."""
    return await state.keys.list()


@router.delete("/keys/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
async def revoke_key(key_id: str, _admin: Admin, state: State) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    if not await state.keys.revoke(key_id):
        raise Problem(404, f"no key {key_id!r}")
