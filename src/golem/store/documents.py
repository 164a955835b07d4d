"""Documents the layers above keep in the store: an automation and its schedule, a goal
loop. The store knows nothing of their shapes (JSON, like a run's state); it keeps each
under its kind and key with its tenant, and changes one only as its writer read it:
``version`` counts its writes, and a write that names another version than the one kept
changes nothing (compare and swap), whichever process of the store made the other one. Every
change is announced under ``documents_key(kind)``."""

from __future__ import annotations

import re
from typing import Protocol

from sqlalchemy import delete, insert, select, update

from golem.core.errors import StoreError
from golem.store.bounds import bounded
from golem.store.notify import documents_key
from golem.store.records import DocumentRecord
from golem.store.repository import MemoryRepository, SqlRepository
from golem.store.schema import documents

__all__ = ["Documents", "MemoryDocuments", "SqlDocuments", "check_document_name"]

_TABLE = documents.c
KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
KEY_MAX = 200


class Documents(Protocol):
    """Documents the layers above keep (``store.documents``)."""

    async def put(
        self, kind: str, key: str, document: str, *, version: int, now: float
    ) -> int | None:
        """Keep ``document`` as ``kind``/``key`` if the one kept is at ``version`` (0: none
        yet; this store's tenant makes it); its new version, or None when another write came
        first (read it again). Announced under ``documents_key(kind)``."""
        ...

    async def load(self, kind: str, key: str) -> DocumentRecord | None:
        """A document, or None."""
        ...

    async def of_kind(self, kind: str) -> list[DocumentRecord]:
        """The documents of ``kind``, oldest first."""
        ...

    async def delete(self, kind: str, key: str) -> bool:
        """Forget a document; False when there was none."""
        ...


def check_document_name(kind: str, key: str) -> None:
    """StoreError unless ``kind`` and ``key`` can name a document."""
    if not KIND.match(kind):
        raise StoreError(f"a document's kind is 1-32 lowercase letters, digits, - or _: {kind!r}")
    if not 1 <= len(key) <= KEY_MAX:
        raise StoreError(f"a document's key is 1 to {KEY_MAX} characters")


def _record(row: object) -> DocumentRecord:
    return DocumentRecord.model_validate(row, from_attributes=True)


@bounded(retried={"load", "of_kind"}, once={"put", "delete"})
class SqlDocuments(SqlRepository):
    """Documents in SQL."""

    async def put(
        self, kind: str, key: str, document: str, *, version: int, now: float
    ) -> int | None:
        """Keep ``document`` as ``kind``/``key`` if the one kept is at ``version`` (0: none
        is kept yet, and this store's tenant makes it); the new version, or None when the
        kept one is another (someone wrote it since it was read: read it again)."""
        check_document_name(kind, key)
        changed = (documents_key(kind),)
        async with self.transaction(write=True, changed=changed) as db:
            if version == 0:
                tenant = self._creating("a document")
                taken = await db.execute(
                    select(_TABLE.key).where(_TABLE.kind == kind, _TABLE.key == key)
                )
                if taken.first() is not None:
                    return None
                await db.execute(
                    insert(documents).values(
                        kind=kind,
                        key=key,
                        tenant=tenant,
                        version=1,
                        created=now,
                        updated=now,
                        document=document,
                    )
                )
                return 1
            done = await db.execute(
                update(documents)
                .where(
                    _TABLE.kind == kind,
                    _TABLE.key == key,
                    _TABLE.version == version,
                    self._mine(documents),
                )
                .values(version=version + 1, updated=now, document=document)
            )
        return version + 1 if done.rowcount == 1 else None

    async def load(self, kind: str, key: str) -> DocumentRecord | None:
        """``kind``/``key``, or None."""
        async with self.transaction() as db:
            row = (
                await db.execute(
                    select(documents).where(
                        _TABLE.kind == kind, _TABLE.key == key, self._mine(documents)
                    )
                )
            ).first()
        return _record(row) if row is not None else None

    async def of_kind(self, kind: str) -> list[DocumentRecord]:
        """Every document of ``kind`` this store sees, oldest first."""
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(documents)
                    .where(_TABLE.kind == kind, self._mine(documents))
                    .order_by(_TABLE.created, _TABLE.key)
                )
            ).all()
        return [_record(row) for row in rows]

    async def delete(self, kind: str, key: str) -> bool:
        """Forget ``kind``/``key``; False when there was none."""
        async with self.transaction(write=True, changed=(documents_key(kind),)) as db:
            done = await db.execute(
                delete(documents).where(
                    _TABLE.kind == kind, _TABLE.key == key, self._mine(documents)
                )
            )
        return bool(done.rowcount)


class MemoryDocuments(MemoryRepository):
    """Documents in memory."""

    async def put(
        self, kind: str, key: str, document: str, *, version: int, now: float
    ) -> int | None:
        """Keep ``document`` as ``kind``/``key`` if the one kept is at ``version`` (0:
        none yet); its new version, or None when another write came first."""
        check_document_name(kind, key)
        kept = self._data.documents.get((kind, key))
        if version == 0:
            tenant = self._creating("a document")
            if kept is not None:
                return None
            kept = DocumentRecord(
                kind=kind,
                key=key,
                tenant=tenant,
                version=0,
                created=now,
                updated=now,
                document=document,
            )
        elif kept is None or kept.version != version or not self._mine(kept.tenant):
            return None
        self._data.documents[(kind, key)] = kept.model_copy(
            update={"version": version + 1, "updated": now, "document": document}
        )
        self._changed(documents_key(kind))
        return version + 1

    async def load(self, kind: str, key: str) -> DocumentRecord | None:
        """A document, or None."""
        kept = self._data.documents.get((kind, key))
        return kept if kept is not None and self._mine(kept.tenant) else None

    async def of_kind(self, kind: str) -> list[DocumentRecord]:
        """The documents of ``kind``, oldest first."""
        found = [
            kept
            for (of, _), kept in self._data.documents.items()
            if of == kind and self._mine(kept.tenant)
        ]
        return sorted(found, key=lambda kept: (kept.created, kept.key))

    async def delete(self, kind: str, key: str) -> bool:
        """Forget a document; False when there was none."""
        if await self.load(kind, key) is None:
            return False
        del self._data.documents[(kind, key)]
        self._changed(documents_key(kind))
        return True
