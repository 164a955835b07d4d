"""golem's store: runs, their events, the run queue, API keys and the local forge's pull
requests, in SQL (SQLite by default, PostgreSQL by URL)."""

from golem.service.store.database import RunNotFound, StoreError
from golem.service.store.sql import SqlStore, database_url

__all__ = ["RunNotFound", "SqlStore", "StoreError", "database_url"]
