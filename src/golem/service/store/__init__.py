"""golem's store: runs, their events, and the local forge's pull requests, in SQL."""

from golem.service.store.sql import SqlStore, StoreError, database_url

__all__ = ["SqlStore", "StoreError", "database_url"]
