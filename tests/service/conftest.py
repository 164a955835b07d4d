"""The service's fixtures: a fresh database on each of the store's SQL dialects."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.service.store import SqlStore

DATABASES = [
    pytest.param("sqlite"),
    pytest.param("postgresql", marks=pytest.mark.postgres),
]
"""The dialects a ``db_url`` runs on: a SQLite file, and PostgreSQL (a skip fails CI)."""


@pytest.fixture(params=DATABASES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty database: a SQLite file, or a PostgreSQL database of the
    test's own (see ``postgres_url``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'golem.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[SqlStore]:
    """The ``default`` tenant's store on a new database, SQLite or PostgreSQL."""
    store = SqlStore(db_url)
    yield store
    store.close()
