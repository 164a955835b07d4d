"""The server's documents in the store (automations, goal loops) as pydantic models: made
once, changed by compare and swap (a change is worked out again on the document as it is now
whenever another writer, here or on another server of the store, came first), and watched
without polling."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from golem.core.errors import StoreError
from golem.store import Signal, Store, documents_key

__all__ = ["Kept", "Shelf"]

M = TypeVar("M", bound=BaseModel)
ATTEMPTS = 50  # compare-and-swap rounds before giving up (each lost to another writer)


@dataclass(frozen=True)
class Kept(Generic[M]):
    """A document as read: its model, its tenant and the version it was read at."""

    model: M
    tenant: str
    version: int


class Shelf(Generic[M]):
    """The documents of one ``kind`` of a store, as ``model`` instances."""

    def __init__(self, store: Store, kind: str, model: type[M]) -> None:
        self.store = store
        self.kind = kind
        self.model = model

    def for_tenant(self, tenant: str) -> Shelf[M]:
        """The same documents, as ``tenant`` sees and makes them."""
        return Shelf(self.store.for_tenant(tenant), self.kind, self.model)

    def watch(self) -> AbstractContextManager[Signal]:
        """A signal set when a document of this kind is made, changed or deleted."""
        return self.store.watch(documents_key(self.kind))

    async def load(self, key: str) -> Kept[M] | None:
        """One document, or None."""
        record = await self.store.documents.load(self.kind, key)
        if record is None:
            return None
        return Kept(self.model.model_validate_json(record.document), record.tenant, record.version)

    async def all(self) -> list[Kept[M]]:
        """Every document of this kind the store sees, oldest first."""
        return [
            Kept(self.model.model_validate_json(record.document), record.tenant, record.version)
            for record in await self.store.documents.of_kind(self.kind)
        ]

    async def create(self, key: str, model: M) -> bool:
        """Keep ``model`` as ``key`` unless one is kept already (False then)."""
        made = await self.store.documents.put(
            self.kind, key, model.model_dump_json(), version=0, now=time.time()
        )
        return made is not None

    async def change(self, key: str, change: Callable[[M], M | None]) -> M | None:
        """Apply ``change`` to the document as it is now, and keep what it returns; a
        writer that came first makes ``change`` run again on what it wrote. ``change``
        returning None keeps nothing. The model kept (or left), None when there is none."""
        for _ in range(ATTEMPTS):
            kept = await self.load(key)
            if kept is None:
                return None
            changed = change(kept.model.model_copy(deep=True))
            if changed is None:
                return kept.model
            scoped = self.store.for_tenant(kept.tenant)
            written = await scoped.documents.put(
                self.kind, key, changed.model_dump_json(), version=kept.version, now=time.time()
            )
            if written is not None:
                return changed
        raise StoreError(
            f"{self.kind} {key!r} kept changing under this write ({ATTEMPTS} tries): try again"
        )

    async def delete(self, key: str) -> bool:
        """Forget ``key``; False when there was none."""
        return await self.store.documents.delete(self.kind, key)
