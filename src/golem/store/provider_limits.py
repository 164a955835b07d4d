"""The providers' limiters in golem's store: one row per provider, URL and key fingerprint
(``golem.agent.models.limiter`` makes the key; a key itself is never kept), holding the
limiter's record as JSON. A change reads and writes the row in one transaction under its
lock (PostgreSQL: ``SELECT ... FOR UPDATE``; SQLite: the write lock), so every process
sharing the store sees one limiter: a server's runs, several servers, a cluster's nodes."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import select, update

from golem.core.errors import StoreError
from golem.store.plumbing import SqlBase, upsert
from golem.store.schema import provider_limits

__all__ = ["LimitChange", "SqlProviderLimits", "check_limit_key"]

LimitChange = Callable[[str | None], tuple[str | None, bool]]
"""Given the record kept (None: none yet), the record to keep (None: unchanged) and
whether the key's watchers are woken."""
LIMIT_PREFIX = "*limit:"
LONGEST_KEY = 128


def check_limit_key(key: str) -> None:
    """StoreError for a key that is not a limiter's (``*limit:...``, at most 128
    characters): the rows hold nothing else."""
    if not key.startswith(LIMIT_PREFIX) or len(key) > LONGEST_KEY:
        raise StoreError(f"{key[:40]!r} is not a provider limiter's key")


class SqlProviderLimits:
    """The limiters' part of SqlStore (shared by every tenant: a key's limits are the
    provider's, whoever calls it)."""

    async def update_provider_limit(self: SqlBase, key: str, change: LimitChange) -> None:
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
