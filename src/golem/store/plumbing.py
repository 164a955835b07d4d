"""What the SQL store's parts share: the shape of the store they are mixed into."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from sqlalchemy import ColumnElement, Table
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["SqlBase"]


class SqlBase(Protocol):
    """The SqlStore, as its parts (queue, credentials, forge records, keys) see it."""

    tenant: str | None

    def transaction(
        self, *, write: bool = False, changed: tuple[str, ...] = ()
    ) -> AbstractAsyncContextManager[AsyncConnection]: ...
    def _mine(self, table: Table) -> ColumnElement[bool]: ...
    def _creating(self, what: str) -> str: ...
