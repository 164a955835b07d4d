"""Webhook deliveries in golem's store, kept once: each id of a delivery that started a run
is a row keyed by tenant, source and id, inserted in the transaction that keeps the run
(``store.runs.create``), or alone, its run empty, for one handled without starting a run
whose answer must not be said twice (``store.deliveries.handle_once``: a refusal). A
second delivery with one of those ids conflicts on the key and the database refuses it,
whichever process of the store inserts it and however many insert at once (``ON CONFLICT
DO NOTHING``: on PostgreSQL the second insert waits for the first's transaction, then finds
its row); the run kept with it goes back with it."""

from __future__ import annotations

import time
from typing import Protocol

from sqlalchemy import ColumnElement, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.core.errors import DuplicateDelivery
from golem.store.bounds import bounded
from golem.store.records import DeliveryRecord
from golem.store.repository import MemoryData, MemoryRepository, SqlRepository, upsert
from golem.store.schema import webhook_deliveries

__all__ = [
    "Deliveries",
    "MemoryDeliveries",
    "SqlDeliveries",
    "keep_delivery",
    "remember_delivery",
]

_TABLE = webhook_deliveries.c


class Deliveries(Protocol):
    """Webhook deliveries, kept once (``store.deliveries``)."""

    async def find(self, source: str, ids: tuple[str, ...]) -> str | None:
        """The run a webhook delivery with one of ``ids`` started, or None."""
        ...

    async def handle_once(self, delivery: DeliveryRecord) -> bool:
        """Keep ``delivery`` as handled without starting a run (an answer said once, as a
        refusal); False when one of its ids was kept already, by any process."""
        ...

    async def prune(self, before: float) -> int:
        """Forget the deliveries kept before ``before`` (a time); how many ids went."""
        ...


async def keep_delivery(
    db: AsyncConnection, tenant: str, delivery: DeliveryRecord, run_id: str | None, created: float
) -> None:
    """Record ``delivery`` as the one that started ``run_id`` (None: handled, starting
    none), within the caller's write transaction; DuplicateDelivery (naming the run it
    started, or ``none``) when one of its ids is kept already."""
    for delivery_id in delivery.ids:
        kept = await db.execute(
            upsert(db, webhook_deliveries)
            .values(
                tenant=tenant,
                source=delivery.source,
                delivery=delivery_id,
                run_id=run_id,
                created=created,
            )
            .on_conflict_do_nothing()
            .returning(_TABLE.delivery)
        )
        if kept.first() is None:  # its key is another run's (rowcount is not told reliably)
            mine = _TABLE.tenant == tenant
            first = await _run_of(db, mine, delivery.source, (delivery_id,))
            raise DuplicateDelivery(first or "none", delivery_id)


async def _run_of(
    db: AsyncConnection, mine: ColumnElement[bool], source: str, ids: tuple[str, ...]
) -> str | None:
    found = await db.execute(
        select(_TABLE.run_id)
        .where(mine, _TABLE.source == source, _TABLE.delivery.in_(ids))
        .limit(1)
    )
    return found.scalar_one_or_none()


@bounded(retried={"find", "prune"}, once={"handle_once"})
class SqlDeliveries(SqlRepository):
    """Webhook deliveries in SQL."""

    async def find(self, source: str, ids: tuple[str, ...]) -> str | None:
        """The run a delivery of this tenant with one of ``ids`` started, or None."""
        async with self.transaction() as db:
            return await _run_of(db, self._mine(webhook_deliveries), source, ids)

    async def handle_once(self, delivery: DeliveryRecord) -> bool:
        """Keep ``delivery`` as handled without a run: False when one of its ids was kept
        already (it was handled, or started a run), and nothing is kept then."""
        tenant = self._creating("a delivery")
        try:
            async with self.transaction(write=True) as db:
                await keep_delivery(db, tenant, delivery, None, time.time())
        except DuplicateDelivery:
            return False
        return True

    async def prune(self, before: float) -> int:
        """Forget the deliveries kept before ``before`` (a time); how many ids went."""
        old = (_TABLE.created < before, self._mine(webhook_deliveries))
        async with self.transaction(write=True) as db:
            pruned = await db.execute(delete(webhook_deliveries).where(*old))
        return int(pruned.rowcount)


def remember_delivery(
    data: MemoryData, tenant: str, delivery: DeliveryRecord, run_id: str | None, created: float
) -> None:
    """``keep_delivery`` in a memory store's ``data``."""
    keys = [(tenant, delivery.source, one) for one in delivery.ids]
    for key in keys:
        if key in data.deliveries:
            raise DuplicateDelivery(data.deliveries[key][0] or "none", key[2])
    data.deliveries.update({key: (run_id, created) for key in keys})


class MemoryDeliveries(MemoryRepository):
    """Webhook deliveries in memory."""

    async def find(self, source: str, ids: tuple[str, ...]) -> str | None:
        """The run a delivery with one of ``ids`` started, or None."""
        for (tenant, kept_source, one), (run_id, _) in self._data.deliveries.items():
            if kept_source == source and one in ids and self._mine(tenant):
                return run_id
        return None

    async def handle_once(self, delivery: DeliveryRecord) -> bool:
        """Keep ``delivery`` as handled without a run (False: seen already)."""
        tenant = self._creating("a delivery")
        try:
            remember_delivery(self._data, tenant, delivery, None, time.time())
        except DuplicateDelivery:
            return False
        return True

    async def prune(self, before: float) -> int:
        """Forget the deliveries kept before ``before``; how many ids went."""
        old = [
            key
            for key, (_, created) in self._data.deliveries.items()
            if created < before and self._mine(key[0])
        ]
        for key in old:
            del self._data.deliveries[key]
        return len(old)
