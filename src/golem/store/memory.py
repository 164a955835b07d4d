"""golem's store in memory, for tests and demos: the same repositories and tenant scoping
as the SQL store, gone when the process ends. Records are immutable, so callers can never
change what is kept."""

from __future__ import annotations

from contextlib import AbstractContextManager

from golem.store.api_keys import MemoryApiKeys
from golem.store.checkpoints import MemoryCheckpoints
from golem.store.credentials import MemoryCredentials
from golem.store.deliveries import MemoryDeliveries
from golem.store.documents import MemoryDocuments
from golem.store.forge_records import MemoryForgeRecords
from golem.store.notify import Signal
from golem.store.pending import MemoryPending
from golem.store.provider_limits import MemoryProviderLimits
from golem.store.queue import MemoryQueue
from golem.store.repository import MemoryData
from golem.store.runs import MemoryRuns
from golem.store.threads import MemoryThreads

__all__ = ["MemoryStore"]


class MemoryStore:
    """The store in this process's memory (one event loop's: it takes no locks)."""

    def __init__(self, *, tenant: str | None = "default", data: MemoryData | None = None) -> None:
        self.tenant = tenant
        self._data = data or MemoryData()
        self.runs = MemoryRuns(self._data, tenant)
        self.queue = MemoryQueue(self._data, tenant)
        self.checkpoints = MemoryCheckpoints(self._data, tenant)
        self.deliveries = MemoryDeliveries(self._data, tenant)
        self.threads = MemoryThreads(self._data, tenant)
        self.pending = MemoryPending(self._data, tenant)
        self.documents = MemoryDocuments(self._data, tenant)
        self.limits = MemoryProviderLimits(self._data, tenant)
        self.forge = MemoryForgeRecords(self._data, tenant)
        self.credentials = MemoryCredentials(self._data, tenant)
        self.keys = MemoryApiKeys(self._data, tenant)

    def for_tenant(self, tenant: str) -> MemoryStore:
        """``tenant``'s store on the same data."""
        return MemoryStore(tenant=tenant, data=self._data)

    async def close(self) -> None:
        """Nothing to release."""

    async def ping(self) -> None:
        """Always reached."""

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key`` (a run id, or ``QUEUE``) changes."""
        return self._data.hub.watch(key)
