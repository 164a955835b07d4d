"""The store's fixtures: every test that takes ``database`` or ``store`` runs on the three
stores of the contract: in memory, a SQLite file and a PostgreSQL database of its own."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from golem.store import MemoryStore, RunRecord, SqlStore, Store

BACKENDS = [
    pytest.param("memory"),
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.postgres),
]
"""The stores a ``database`` runs on (a PostgreSQL skip fails CI)."""
SQL_BACKENDS = BACKENDS[1:]
"""The SQL stores, for what is about SQL itself (connections, processes, migrations)."""


@dataclass
class Database:
    """One new, empty database, and the stores opened on it (closed after the test)."""

    kind: str
    url: str = ""
    memory: MemoryStore = field(default_factory=lambda: MemoryStore(tenant=None))
    opened: list[Store] = field(default_factory=list)

    async def open(self, tenant: str | None = "default") -> Store:
        """A store on this database, as another process would open it (in memory: the
        same data, as one process has it)."""
        if self.kind == "memory":
            return self.memory if tenant is None else self.memory.for_tenant(tenant)
        store = await SqlStore.connect(self.url, tenant=tenant)
        self.opened.append(store)
        return store


@pytest.fixture(params=BACKENDS)
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A new database: in memory, a SQLite file, or a PostgreSQL database of the test's own
    (see ``postgres_url``)."""
    async for database in _database(request, tmp_path):
        yield database


@pytest.fixture(params=SQL_BACKENDS)
async def sql(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    """A new SQL database: a SQLite file, or a PostgreSQL database of the test's own."""
    async for database in _database(request, tmp_path):
        yield database


async def _database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    kind: str = request.param
    url = ""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'golem.db'}"
    elif kind == "postgresql":
        url = request.getfixturevalue("postgres_url")
    database = Database(kind, url)
    yield database
    for store in database.opened:
        await store.close()


@pytest.fixture
async def store(database: Database) -> Store:
    """The ``default`` tenant's store on a new database."""
    return await database.open()


def run(run_id: str, *, created: float | None = None, status: str = "queued") -> RunRecord:
    """A new run's record (the store keeps its document as it is given)."""
    now = time.time() if created is None else created
    document = f'{{"id": "{run_id}", "note": "naïve ✓"}}'
    return RunRecord(
        id=run_id, tenant="", status=status, created=now, updated=now, document=document
    )
