"""API keys in golem's store: each key's tenant, role and a hash of its secret (the
server's ``KeyStore`` makes, checks and caches them)."""

from __future__ import annotations

from sqlalchemy import insert, select, update

from golem.store.plumbing import SqlBase
from golem.store.records import ApiKeyRecord
from golem.store.schema import api_keys

__all__ = ["SqlApiKeys"]


def _key(row: object) -> ApiKeyRecord:
    return ApiKeyRecord.model_validate(row, from_attributes=True)


class SqlApiKeys:
    """The API-keys part of SqlStore (keys span tenants: they say whose they are)."""

    async def add_api_key(self: SqlBase, key: ApiKeyRecord, digest: str) -> None:
        """Keep ``key``, with ``digest``, the hash of its secret."""
        async with self.transaction(write=True) as db:
            await db.execute(insert(api_keys).values(hash=digest, **key.model_dump()))

    async def find_api_key(self: SqlBase, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and the hash of its secret, or None."""
        async with self.transaction() as db:
            row = (await db.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
        return (_key(row), str(row.hash)) if row is not None else None

    async def list_api_keys(self: SqlBase, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first (of one tenant, when given)."""
        query = select(api_keys).order_by(api_keys.c.created.desc())
        if tenant is not None:
            query = query.where(api_keys.c.tenant == tenant)
        async with self.transaction() as db:
            rows = (await db.execute(query)).all()
        return [_key(row) for row in rows]

    async def revoke_api_key(self: SqlBase, key_id: str) -> bool:
        """Revoke a key; False when there is no such key."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(api_keys).where(api_keys.c.id == key_id).values(revoked=True)
            )
        return bool(done.rowcount)
