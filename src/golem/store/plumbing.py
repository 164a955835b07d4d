"""What the SQL store's parts share: the shape of the store they are mixed into, and reading
a run's row."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Table
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.store.records import RunRecord

__all__ = ["SqlBase", "run_record"]


class SqlBase(Protocol):
    """The SqlStore, as its parts (queue, credentials, forge records, keys) see it."""

    tenant: str | None

    def transaction(
        self, *, write: bool = False, changed: tuple[str, ...] = ()
    ) -> AbstractAsyncContextManager[AsyncConnection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...
    def _creating(self, what: str) -> str: ...


def run_record(row: Any) -> RunRecord:
    """A run's record from its row."""
    return RunRecord(
        id=row.id, tenant=row.tenant, status=row.status, created=row.created,
        updated=row.updated, document=row.state, cancel_requested=bool(row.cancel_requested),
        gate_decision=row.gate_decision, owner=row.owner,
    )  # fmt: skip
