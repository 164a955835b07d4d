"""Pending requests in golem's store: a request that arrived while its thread's run was
running (a follow-up asked on a pull request, a Slack mention, a Linear comment), one per
person and thread (a later one from the same person replaces the first, and counts its
``version`` up), until that run ends. Its start is claimed in the transaction that keeps
the run answering it (``store.runs.create(pending=...)``): a conditional delete of the
request as it was read, so that it starts once whichever servers of the store see the end,
before or after a restart; in that transaction the thread's other pending requests go on
waiting for the new run (one run at a time per thread)."""

from __future__ import annotations

import secrets
from typing import Any, Protocol

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.core.errors import PendingTaken
from golem.store.bounds import bounded
from golem.store.records import PendingRecord
from golem.store.repository import MemoryData, MemoryRepository, SqlRepository, upsert
from golem.store.schema import pending_requests

__all__ = [
    "MemoryPending",
    "Pending",
    "SqlPending",
    "check_pending_in_memory",
    "claim_pending",
    "claim_pending_in_memory",
]

_TABLE = pending_requests.c


class Pending(Protocol):
    """Requests waiting for their thread's run to end (``store.pending``)."""

    async def keep(self, request: PendingRecord) -> PendingRecord:
        """Keep ``request`` (its tenant is this store's), replacing the same person's in
        the same thread; what is kept, its version counted up."""
        ...

    async def in_thread(self, source: str, thread: str) -> list[PendingRecord]:
        """The requests pending in ``thread``, oldest first."""
        ...

    async def waiting(self, source: str) -> list[PendingRecord]:
        """Every request pending in ``source``, oldest first (a server that starts waits
        for their runs' ends)."""
        ...

    async def drop(self, request: PendingRecord) -> bool:
        """Forget ``request`` as it was read (it will never start: refused when it came
        to start); False when it was started, replaced or dropped since."""
        ...

    async def wait_again(self, request: PendingRecord, run_id: str) -> bool:
        """Let ``request`` as it was read wait for ``run_id`` (a run that began in its
        thread before it could start); False, changing nothing, when it was started,
        replaced or dropped since: a newer request of the person's stays as it is."""
        ...


def _key(table: Any, request: PendingRecord, tenant: str) -> tuple[Any, ...]:
    return (
        table.tenant == tenant,
        table.source == request.source,
        table.thread == request.thread,
        table.person == request.person,
    )


def _record(row: Any) -> PendingRecord:
    return PendingRecord(
        source=row.source,
        thread=row.thread,
        person=row.person,
        run_id=row.run_id,
        asked_by=row.asked_by,
        request=row.request,
        detail=row.detail,
        tenant=row.tenant,
        created=row.created,
        version=row.version,
    )


def first_version() -> int:
    """A new request's version: random, so that a copy read of an earlier request the same
    person made in the thread (claimed or dropped since) never matches this one."""
    return secrets.randbelow(2**30)


async def claim_pending(
    db: AsyncConnection, tenant: str, request: PendingRecord, run_id: str
) -> None:
    """Within the caller's write transaction (the one keeping run ``run_id``): delete
    ``request`` as it was read (PendingTaken when another caller started, replaced or
    dropped it first), and let the thread's other requests wait for ``run_id``."""
    taken = await db.execute(
        delete(pending_requests).where(
            *_key(_TABLE, request, tenant), _TABLE.version == request.version
        )
    )
    if taken.rowcount != 1:
        raise PendingTaken(request.thread, request.asked_by or request.person)
    await db.execute(
        update(pending_requests)
        .where(
            _TABLE.tenant == tenant,
            _TABLE.source == request.source,
            _TABLE.thread == request.thread,
        )
        .values(run_id=run_id)
    )


@bounded(retried={"in_thread", "waiting"}, once={"keep", "drop", "wait_again"})
class SqlPending(SqlRepository):
    """Pending requests in SQL."""

    async def keep(self, request: PendingRecord) -> PendingRecord:
        """Keep ``request``, replacing the same person's in its thread."""
        tenant = self._creating("a pending request")
        values = request.model_dump(exclude={"tenant", "version"})
        replaced = {
            k: v for k, v in values.items() if k not in ("source", "thread", "person", "created")
        }
        async with self.transaction(write=True) as db:
            kept = await db.execute(
                upsert(db, pending_requests)
                .values(tenant=tenant, version=first_version(), **values)
                .on_conflict_do_update(
                    index_elements=["tenant", "source", "thread", "person"],
                    set_={**replaced, "version": _TABLE.version + 1},
                )
                .returning(pending_requests)
            )
            return _record(kept.one())

    async def in_thread(self, source: str, thread: str) -> list[PendingRecord]:
        """The requests pending in ``thread`` (this tenant's), oldest first."""
        mine = (self._mine(pending_requests), _TABLE.source == source, _TABLE.thread == thread)
        return await self._select(*mine)

    async def waiting(self, source: str) -> list[PendingRecord]:
        """Every request pending in ``source`` (this tenant's), oldest first."""
        return await self._select(self._mine(pending_requests), _TABLE.source == source)

    async def _select(self, *where: Any) -> list[PendingRecord]:
        async with self.transaction() as db:
            rows = await db.execute(
                select(pending_requests).where(*where).order_by(_TABLE.created, _TABLE.person)
            )
        return [_record(row) for row in rows]

    async def drop(self, request: PendingRecord) -> bool:
        """Forget ``request`` as it was read (False: it changed or went since)."""
        if self.tenant is None:
            return False
        async with self.transaction(write=True) as db:
            gone = await db.execute(
                delete(pending_requests).where(
                    *_key(_TABLE, request, self.tenant), _TABLE.version == request.version
                )
            )
        return gone.rowcount == 1

    async def wait_again(self, request: PendingRecord, run_id: str) -> bool:
        """Let ``request`` as it was read wait for ``run_id`` (False: it changed or went)."""
        if self.tenant is None:
            return False
        async with self.transaction(write=True) as db:
            moved = await db.execute(
                update(pending_requests)
                .where(*_key(_TABLE, request, self.tenant), _TABLE.version == request.version)
                .values(run_id=run_id)
            )
        return moved.rowcount == 1


def check_pending_in_memory(data: MemoryData, tenant: str, request: PendingRecord) -> None:
    """PendingTaken unless ``request`` is kept in ``data`` as it was read."""
    kept = data.pending.get((tenant, request.source, request.thread, request.person))
    if kept is None or kept.version != request.version:
        raise PendingTaken(request.thread, request.asked_by or request.person)


def claim_pending_in_memory(
    data: MemoryData, tenant: str, request: PendingRecord, run_id: str
) -> None:
    """``claim_pending`` in a memory store's ``data``."""
    check_pending_in_memory(data, tenant, request)
    key = (tenant, request.source, request.thread, request.person)
    del data.pending[key]
    for other, waiting in data.pending.items():
        if other[:3] == key[:3]:
            data.pending[other] = waiting.model_copy(update={"run_id": run_id})


class MemoryPending(MemoryRepository):
    """Pending requests in memory."""

    async def keep(self, request: PendingRecord) -> PendingRecord:
        """Keep ``request``, replacing the same person's in its thread."""
        tenant = self._creating("a pending request")
        key = (tenant, request.source, request.thread, request.person)
        before = self._data.pending.get(key)
        kept = request.model_copy(update={"tenant": tenant, "version": first_version()})
        if before is not None:  # the same person's slot, their latest words
            kept = kept.model_copy(
                update={"version": before.version + 1, "created": before.created}
            )
        self._data.pending[key] = kept
        return kept

    async def in_thread(self, source: str, thread: str) -> list[PendingRecord]:
        """The requests pending in ``thread``, oldest first."""
        return self._select(lambda r: r.source == source and r.thread == thread)

    async def waiting(self, source: str) -> list[PendingRecord]:
        """Every request pending in ``source``, oldest first."""
        return self._select(lambda r: r.source == source)

    def _select(self, wanted: Any) -> list[PendingRecord]:
        found = [r for r in self._data.pending.values() if self._mine(r.tenant) and wanted(r)]
        return sorted(found, key=lambda r: (r.created, r.person))

    async def drop(self, request: PendingRecord) -> bool:
        """Forget ``request`` as it was read (False: it changed or went since)."""
        if self.tenant is None:
            return False
        key = (self.tenant, request.source, request.thread, request.person)
        kept = self._data.pending.get(key)
        if kept is None or kept.version != request.version:
            return False
        del self._data.pending[key]
        return True

    async def wait_again(self, request: PendingRecord, run_id: str) -> bool:
        """Let ``request`` as it was read wait for ``run_id`` (False: it changed or went)."""
        if self.tenant is None:
            return False
        key = (self.tenant, request.source, request.thread, request.person)
        kept = self._data.pending.get(key)
        if kept is None or kept.version != request.version:
            return False
        self._data.pending[key] = kept.model_copy(update={"run_id": run_id})
        return True
