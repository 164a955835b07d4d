"""golem.store: runs, their events, the run queue, the webhook deliveries that started runs,
the requests pending until their thread's run ends,
API keys, tenants' forge credentials (sealed) and the local forge's records, each a small
repository of the store (``store.runs``, ``store.queue``, ``store.keys``...). Async: SQL on
SQLAlchemy's asyncio engine (SQLite by default, PostgreSQL by URL), or in memory for tests
and demos; both wake waiters on change (``watch``) instead of being polled.

The store sits below the blueprint and forge layers: a run's state and its events are kept
as JSON documents of theirs, with the fields it queries by in columns of their own."""

from golem.store.api_keys import ApiKeys
from golem.store.bounds import RETRY_AFTER
from golem.store.checkpoints import Checkpoints
from golem.store.cipher import TokenCipher, new_key
from golem.store.contract import Store
from golem.store.credentials import Credentials
from golem.store.deliveries import Deliveries
from golem.store.documents import Documents
from golem.store.forge_records import ForgeRecords
from golem.store.memory import MemoryStore
from golem.store.notify import QUEUE, RECHECK, RESUME, ROOM, Signal, control_key, documents_key
from golem.store.pending import Pending
from golem.store.provider_limits import ProviderLimits
from golem.store.queue import Queue
from golem.store.records import (
    ACTIVE,
    FINISHED,
    ApiKeyRecord,
    AppKey,
    CheckpointRecord,
    CommentRecord,
    Decision,
    DeliveryRecord,
    DocumentRecord,
    EventRecord,
    ForgeCredential,
    ForgeName,
    ForgeSecret,
    OAuthGrant,
    PendingRecord,
    PullRequestRecord,
    Role,
    RunCap,
    RunRecord,
    ThreadRecord,
    check_claim,
    check_token,
)
from golem.store.runs import Runs
from golem.store.sql import SqlStore, database_url
from golem.store.threads import Threads

__all__ = [
    "ACTIVE",
    "FINISHED",
    "QUEUE",
    "RECHECK",
    "RESUME",
    "RETRY_AFTER",
    "ROOM",
    "ApiKeyRecord",
    "ApiKeys",
    "AppKey",
    "CheckpointRecord",
    "Checkpoints",
    "CommentRecord",
    "Credentials",
    "Decision",
    "Deliveries",
    "DeliveryRecord",
    "DocumentRecord",
    "Documents",
    "EventRecord",
    "ForgeCredential",
    "ForgeName",
    "ForgeRecords",
    "ForgeSecret",
    "MemoryStore",
    "OAuthGrant",
    "Pending",
    "PendingRecord",
    "ProviderLimits",
    "PullRequestRecord",
    "Queue",
    "Role",
    "RunCap",
    "RunRecord",
    "Runs",
    "Signal",
    "SqlStore",
    "Store",
    "ThreadRecord",
    "Threads",
    "TokenCipher",
    "check_claim",
    "check_token",
    "control_key",
    "database_url",
    "documents_key",
    "new_key",
]
