"""Run checkpoints in golem's store: one per run, its checkout as its last finished node
left it (``golem.forge.snapshot``'s bytes), replaced after each node and deleted when the
run ends. A run whose machine died resumes from it on another one (a Ray cluster's node)."""

from __future__ import annotations

import time

from sqlalchemy import delete, select

from golem.store.plumbing import SqlBase, held_claim
from golem.store.records import CheckpointRecord
from golem.store.schema import run_checkpoints, runs

__all__ = ["SqlCheckpoints"]


class SqlCheckpoints:
    """The checkpoint part of SqlStore (a tenant's store sees its own runs' only)."""

    async def save_checkpoint(
        self: SqlBase, run_id: str, node: str, data: bytes, claim: int | None = None
    ) -> None:
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

    async def load_checkpoint(self: SqlBase, run_id: str) -> CheckpointRecord | None:
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

    async def delete_checkpoint(self: SqlBase, run_id: str, claim: int | None = None) -> None:
        """Forget run ``run_id``'s checkpoint (it ended); with ``claim``, only while the
        run's claim is that one."""
        async with self.transaction(write=True) as db:
            if await held_claim(db, self._mine(runs), run_id, claim) is not None:
                await db.execute(delete(run_checkpoints).where(run_checkpoints.c.run_id == run_id))
