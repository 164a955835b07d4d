"""The providers' limiters in golem's store: one row per provider, URL and key fingerprint
(``golem.agent.models.limiter`` makes the key; a key itself is never kept), holding the
limiter's record as JSON. A change reads and writes the row in one transaction under its
lock (PostgreSQL: ``SELECT ... FOR UPDATE``; SQLite: the write lock), so every process
sharing the store sees one limiter: a server's runs, several servers, a cluster's nodes."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy import select, update

from golem.core.errors import StoreError
from golem.store.bounds import bounded
from golem.store.notify import Signal
from golem.store.repository import MemoryRepository, SqlRepository, upsert
from golem.store.schema import provider_limits

__all__ = [
    "LimitChange",
    "MemoryProviderLimits",
    "ProviderLimits",
    "SqlProviderLimits",
    "check_limit_key",
]

LimitChange = Callable[[str | None], tuple[str | None, bool]]
"""Given the record kept (None: none yet), the record to keep (None: unchanged) and
whether the key's watchers are woken."""
LIMIT_PREFIX = "*limit:"
LONGEST_KEY = 128


class ProviderLimits(Protocol):
    """The providers' limiters (``store.limits``), shared by every tenant: a key's limits
    are the provider's, whoever calls it."""

    async def update(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of a provider limiter's ``key`` (``*limit:``)
        atomically across every process sharing the store; its watchers are woken when
        the change asks (``golem.agent.models.limiter``)."""
        ...

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key``'s record changes with a wake asked for."""
        ...


def check_limit_key(key: str) -> None:
    """StoreError for a key that is not a limiter's (``*limit:...``, at most 128
    characters): the rows hold nothing else."""
    if not key.startswith(LIMIT_PREFIX) or len(key) > LONGEST_KEY:
        raise StoreError(f"{key[:40]!r} is not a provider limiter's key")


@bounded(retried=(), once={"update"})
class SqlProviderLimits(SqlRepository):
    """The limiters in SQL."""

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key``'s record changes with a wake asked for."""
        return self.database.hub.watch(key)

    async def update(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of ``key``, atomically across processes."""
        check_limit_key(key)
        woken: list[str] = []
        async with self.transaction(write=True, changed=woken) as db:
            await db.execute(
                upsert(db, provider_limits)
                .values(key=key, document=None, updated=time.time())
                .on_conflict_do_nothing(index_elements=["key"])
            )
            kept = (
                await db.execute(
                    select(provider_limits.c.document)
                    .where(provider_limits.c.key == key)
                    .with_for_update()
                )
            ).scalar_one_or_none()
            document, wake = change(kept)
            if document is not None:
                await db.execute(
                    update(provider_limits)
                    .where(provider_limits.c.key == key)
                    .values(document=document, updated=time.time())
                )
            if wake:
                woken.append(key)


class MemoryProviderLimits(MemoryRepository):
    """The limiters in memory."""

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key``'s record changes with a wake asked for."""
        return self._data.hub.watch(key)

    async def update(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of ``key`` (nothing runs in between)."""
        check_limit_key(key)
        document, wake = change(self._data.limits.get(key))
        if document is not None:
            self._data.limits[key] = document
        if wake:
            self._changed(key)
