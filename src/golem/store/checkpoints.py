"""Run checkpoints in golem's store: one per run, its checkout as its last finished node
left it (``golem.forge.snapshot``'s bytes), replaced after each node and deleted when the
run ends. A run whose machine died resumes from it on another one (a Ray cluster's node).
A tenant's store sees its own runs' only."""

from __future__ import annotations

import time
from typing import Protocol

from sqlalchemy import delete, select

from golem.store.bounds import bounded
from golem.store.records import CheckpointRecord
from golem.store.repository import MemoryRepository, SqlRepository, held_claim
from golem.store.schema import run_checkpoints, runs

__all__ = ["Checkpoints", "MemoryCheckpoints", "SqlCheckpoints"]


class Checkpoints(Protocol):
    """Runs' checkpoints (``store.checkpoints``)."""

    async def save(self, run_id: str, node: str, data: bytes, claim: int | None = None) -> None:
        """Keep ``data`` as the run's checkpoint after blueprint node ``node`` (replacing
        the one before); with ``claim``, only while the run's claim is that one (else
        RunTaken)."""
        ...

    async def load(self, run_id: str) -> CheckpointRecord | None:
        """The run's checkpoint, or None."""
        ...

    async def delete(self, run_id: str, claim: int | None = None) -> None:
        """Forget the run's checkpoint; with ``claim``, only while the run's claim is that
        one (else RunTaken)."""
        ...


@bounded(retried={"save", "load", "delete"}, once=())
class SqlCheckpoints(SqlRepository):
    """Checkpoints in SQL."""

    async def save(self, run_id: str, node: str, data: bytes, claim: int | None = None) -> None:
        """Keep ``data`` as run ``run_id``'s checkpoint after blueprint node ``node``; with
        ``claim``, only while the run's claim is that one."""
        async with self.transaction(write=True) as db:
            if await held_claim(db, self._mine(runs), run_id, claim) is None:
                return  # not this tenant's run (or gone): nothing of it is kept
            await db.execute(delete(run_checkpoints).where(run_checkpoints.c.run_id == run_id))
            await db.execute(
                run_checkpoints.insert().values(
                    run_id=run_id, node=node, created=time.time(), data=data
                )
            )

    async def load(self, run_id: str) -> CheckpointRecord | None:
        """Run ``run_id``'s checkpoint, or None."""
        query = (
            select(run_checkpoints)
            .join(runs, runs.c.id == run_checkpoints.c.run_id)
            .where(run_checkpoints.c.run_id == run_id, self._mine(runs))
        )
        async with self.transaction() as db:
            row = (await db.execute(query)).one_or_none()
        if row is None:
            return None
        return CheckpointRecord(node=row.node, created=row.created, data=bytes(row.data))

    async def delete(self, run_id: str, claim: int | None = None) -> None:
        """Forget run ``run_id``'s checkpoint (it ended); with ``claim``, only while the
        run's claim is that one."""
        async with self.transaction(write=True) as db:
            if await held_claim(db, self._mine(runs), run_id, claim) is not None:
                await db.execute(delete(run_checkpoints).where(run_checkpoints.c.run_id == run_id))


class MemoryCheckpoints(MemoryRepository):
    """Checkpoints in memory."""

    async def save(self, run_id: str, node: str, data: bytes, claim: int | None = None) -> None:
        """Keep the run's checkpoint after ``node`` (with ``claim``: only while it holds)."""
        if self._held(run_id, claim):
            record = CheckpointRecord(node=node, created=time.time(), data=data)
            self._data.checkpoints[run_id] = record

    async def load(self, run_id: str) -> CheckpointRecord | None:
        """The run's checkpoint, or None."""
        if self._run(run_id) is None:
            return None
        return self._data.checkpoints.get(run_id)

    async def delete(self, run_id: str, claim: int | None = None) -> None:
        """Forget the run's checkpoint (with ``claim``: only while it holds)."""
        if self._held(run_id, claim):
            self._data.checkpoints.pop(run_id, None)
