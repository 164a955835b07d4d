"""What the SQL store's parts share: the shape of the store they are mixed into, reading a
run's row, and an insert that can skip or update a row that is there."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import ColumnElement, Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

if TYPE_CHECKING:
    from sqlalchemy.dialects.sqlite import Insert

from golem.store.records import RunRecord, check_claim
from golem.store.schema import runs

__all__ = ["SqlBase", "held_claim", "run_record", "upsert"]


class SqlBase(Protocol):
    """The SqlStore, as its parts (queue, credentials, forge records, keys) see it."""

    tenant: str | None

    def transaction(
        self, *, write: bool = False, changed: Sequence[str] = ()
    ) -> AbstractAsyncContextManager[AsyncConnection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...
    def _creating(self, what: str) -> str: ...


def run_record(row: Any) -> RunRecord:
    """A run's record from its row."""
    return RunRecord(
        id=row.id,
        tenant=row.tenant,
        status=row.status,
        created=row.created,
        updated=row.updated,
        document=row.state,
        cancel_requested=bool(row.cancel_requested),
        gate_decision=row.gate_decision,
        owner=row.owner,
        claim=row.claim,
    )


async def held_claim(
    db: AsyncConnection, mine: ColumnElement[bool], run_id: str, claim: int | None
) -> int | None:
    """Lock the run's row for this write and return its claim (None: not the store's run);
    RunTaken when ``claim`` is given and the run's is another (it was claimed again since
    the writer read it)."""
    held = (
        await db.execute(select(runs.c.claim).where(runs.c.id == run_id, mine).with_for_update())
    ).scalar_one_or_none()
    if held is None:
        return None
    check_claim(run_id, int(held), claim)
    return int(held)


def upsert(db: AsyncConnection, table: Table) -> Insert:
    """An INSERT into ``table`` in the connection's dialect, with its ``on_conflict_do_*``
    (PostgreSQL's and SQLite's are the same shape). The dialect's module is imported here,
    when a write needs it: reading the store (`golem runs ls`) never pays for it."""
    if db.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)  # type: ignore[return-value]
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)
