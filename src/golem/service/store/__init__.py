"""golem's store: runs, their events, the run queue, API keys, tenants' forge credentials
(sealed) and the local forge's pull requests, in SQL (SQLite by default, PostgreSQL by URL)."""

from golem.service.store.cipher import TokenCipher, new_key
from golem.service.store.credentials import ForgeCredential, ForgeName, check_token
from golem.service.store.sql import SqlStore, database_url

__all__ = [
    "ForgeCredential",
    "ForgeName",
    "SqlStore",
    "TokenCipher",
    "check_token",
    "database_url",
    "new_key",
]
