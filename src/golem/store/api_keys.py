"""API keys in golem's store: each key's tenant, role and a hash of its secret (the
server's ``KeyStore`` makes, checks and caches them). Keys span tenants: they say whose
they are."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import insert, select, update

from golem.store.bounds import bounded
from golem.store.records import ApiKeyRecord
from golem.store.repository import MemoryRepository, SqlRepository
from golem.store.schema import api_keys

__all__ = ["ApiKeys", "MemoryApiKeys", "SqlApiKeys"]


class ApiKeys(Protocol):
    """API keys (``store.keys``)."""

    async def add(self, key: ApiKeyRecord, digest: str) -> None:
        """Keep an API key with the hash of its secret."""
        ...

    async def find(self, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and its hash, or None."""
        ...

    async def all(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first (of one tenant, when given)."""
        ...

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False when there is none."""
        ...


def _key(row: object) -> ApiKeyRecord:
    return ApiKeyRecord.model_validate(row, from_attributes=True)


@bounded(retried={"find", "all"}, once={"add", "revoke"})
class SqlApiKeys(SqlRepository):
    """API keys in SQL."""

    async def add(self, key: ApiKeyRecord, digest: str) -> None:
        """Keep ``key``, with ``digest``, the hash of its secret."""
        async with self.transaction(write=True) as db:
            await db.execute(insert(api_keys).values(hash=digest, **key.model_dump()))

    async def find(self, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and the hash of its secret, or None."""
        async with self.transaction() as db:
            row = (await db.execute(select(api_keys).where(api_keys.c.id == key_id))).first()
        return (_key(row), str(row.hash)) if row is not None else None

    async def all(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first (of one tenant, when given)."""
        query = select(api_keys).order_by(api_keys.c.created.desc())
        if tenant is not None:
            query = query.where(api_keys.c.tenant == tenant)
        async with self.transaction() as db:
            rows = (await db.execute(query)).all()
        return [_key(row) for row in rows]

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False when there is no such key."""
        async with self.transaction(write=True) as db:
            done = await db.execute(
                update(api_keys).where(api_keys.c.id == key_id).values(revoked=True)
            )
        return bool(done.rowcount)


class MemoryApiKeys(MemoryRepository):
    """API keys in memory."""

    async def add(self, key: ApiKeyRecord, digest: str) -> None:
        """Keep an API key with the hash of its secret."""
        self._data.keys[key.id] = (key, digest)

    async def find(self, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and its hash, or None."""
        return self._data.keys.get(key_id)

    async def all(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first."""
        keys = [key for key, _ in self._data.keys.values() if tenant in (None, key.tenant)]
        return sorted(keys, key=lambda key: key.created, reverse=True)

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key."""
        kept = self._data.keys.get(key_id)
        if kept is None:
            return False
        self._data.keys[key_id] = (kept[0].model_copy(update={"revoked": True}), kept[1])
        return True
