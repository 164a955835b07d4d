"""The store's contract: what the layers above (blueprint, forge, service, cli) may ask of
golem's store. A store is a set of small repositories, each a protocol of its own kept by a
SQL implementation (SQLite, PostgreSQL: ``SqlStore``) and a memory one (tests, demos:
``MemoryStore``), all with the same tenant scoping: a store acts for one tenant, or for all
of them (``tenant=None``), which reads everything and creates nothing."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from golem.store.api_keys import ApiKeys
from golem.store.checkpoints import Checkpoints
from golem.store.credentials import Credentials
from golem.store.deliveries import Deliveries
from golem.store.documents import Documents
from golem.store.forge_records import ForgeRecords
from golem.store.notify import Signal
from golem.store.pending import Pending
from golem.store.provider_limits import ProviderLimits
from golem.store.queue import Queue
from golem.store.runs import Runs
from golem.store.threads import Threads

__all__ = ["Store"]


class Store(Protocol):
    """Runs and their events (``runs``), the queue (``queue``), checkpoints, webhook
    deliveries, source threads, pending requests, documents, provider limits
    (``limits``), the local forge's records (``forge``), forge credentials and API keys
    (``keys``): each a repository of this store's tenant."""

    @property
    def tenant(self) -> str | None:
        """The tenant this store acts for (None: all of them)."""
        ...

    @property
    def runs(self) -> Runs: ...
    @property
    def queue(self) -> Queue: ...
    @property
    def checkpoints(self) -> Checkpoints: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def threads(self) -> Threads: ...
    @property
    def pending(self) -> Pending: ...
    @property
    def documents(self) -> Documents: ...
    @property
    def limits(self) -> ProviderLimits: ...
    @property
    def forge(self) -> ForgeRecords: ...
    @property
    def credentials(self) -> Credentials: ...
    @property
    def keys(self) -> ApiKeys: ...

    def for_tenant(self, tenant: str) -> Store:
        """``tenant``'s store on the same data (closing it closes nothing)."""
        ...

    async def close(self) -> None:
        """Release what the store holds."""
        ...

    async def ping(self) -> None:
        """Reach the database; StoreUnavailable when it is away (``/healthz``)."""
        ...

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key`` changes: a run id (its state, cancel request, gate
        answer or events), or ``QUEUE`` (a run was queued)."""
        ...
