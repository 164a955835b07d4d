"""golem's store in memory, for tests and demos: the same contract and tenant scoping as
the SQL store, gone when the process ends. Records are immutable, so callers can never
change what is kept."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from golem.core.errors import DuplicateDelivery, QueueFull, RunNotFound, StoreError
from golem.store.cipher import TokenCipher
from golem.store.documents import check_document_name
from golem.store.forge_records import storable_text
from golem.store.notify import QUEUE, RESUME, Hub, Signal, control_key, documents_key
from golem.store.provider_limits import LimitChange, check_limit_key
from golem.store.records import (
    ACTIVE,
    FINISHED,
    ApiKeyRecord,
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
    PullRequestRecord,
    RunCap,
    RunRecord,
    ThreadRecord,
    check_claim,
    forge_secret,
    sealable,
)

__all__ = ["MemoryStore"]


@dataclass
class _Data:
    runs: dict[str, RunRecord] = field(default_factory=dict)
    events: dict[str, list[EventRecord]] = field(default_factory=dict)
    pull_requests: list[tuple[str, PullRequestRecord]] = field(default_factory=list)
    comments: list[tuple[str, CommentRecord]] = field(default_factory=list)
    tokens: dict[tuple[str, ForgeName], tuple[str, ForgeCredential]] = field(default_factory=dict)
    keys: dict[str, tuple[ApiKeyRecord, str]] = field(default_factory=dict)
    checkpoints: dict[str, CheckpointRecord] = field(default_factory=dict)
    deliveries: dict[tuple[str, str, str], tuple[str | None, float]] = field(default_factory=dict)
    threads: dict[str, ThreadRecord] = field(default_factory=dict)
    resume_at: dict[str, float] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    documents: dict[tuple[str, str], DocumentRecord] = field(default_factory=dict)


class MemoryStore:
    """The store in this process's memory (one event loop's: it takes no locks)."""

    def __init__(self, *, tenant: str | None = "default") -> None:
        self.tenant = tenant
        self._data = _Data()
        self._hub = Hub()

    def for_tenant(self, tenant: str) -> MemoryStore:
        """``tenant``'s store on the same data."""
        scoped = MemoryStore(tenant=tenant)
        scoped._data, scoped._hub = self._data, self._hub
        return scoped

    async def close(self) -> None:
        """Nothing to release."""

    async def ping(self) -> None:
        """Always reached."""

    def watch(self, key: str) -> AbstractContextManager[Signal]:
        """A signal set when ``key`` (a run id, or ``QUEUE``) changes."""
        return self._hub.watch(key)

    # Runs -----------------------------------------------------------------------------

    async def create_run(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
    ) -> None:
        """Keep a new run (if ``cap`` leaves it room, and no run was kept with one of
        ``delivery``'s ids: else DuplicateDelivery), the delivery and ``thread`` with it."""
        tenant = self._creating("a run")
        if record.id in self._data.runs:
            raise StoreError(f"run {record.id!r} exists already")
        if cap is not None:
            taken = sum(run.status in cap.statuses for run in self._data.runs.values())
            if taken >= cap.limit:
                raise QueueFull(cap.reason, retry_after=cap.retry_after)
        if delivery is not None:
            self._keep_delivery(tenant, delivery, record.id, record.created)
        if thread is not None:
            update = {"run_id": record.id, "tenant": tenant, "created": record.created}
            self._data.threads[record.id] = thread.model_copy(update=update)
        self._data.runs[record.id] = record.model_copy(update={"tenant": tenant})
        self._changed(record.id, QUEUE)

    def _keep_delivery(
        self, tenant: str, delivery: DeliveryRecord, run_id: str | None, created: float
    ) -> None:
        keys = [(tenant, delivery.source, one) for one in delivery.ids]
        for key in keys:
            if key in self._data.deliveries:
                raise DuplicateDelivery(self._data.deliveries[key][0] or "none", key[2])
        self._data.deliveries.update({key: (run_id, created) for key in keys})

    async def handle_once(self, delivery: DeliveryRecord) -> bool:
        """Keep ``delivery`` as handled without a run (False: seen already)."""
        try:
            self._keep_delivery(self._creating("a delivery"), delivery, None, time.time())
        except DuplicateDelivery:
            return False
        return True

    async def thread_runs(self, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in ``thread``, newest first."""
        found = [
            t
            for t in self._data.threads.values()
            if t.source == source and t.thread == thread and self._mine(t.tenant)
        ]
        return sorted(found, key=lambda t: t.created, reverse=True)

    async def thread_of(self, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        found = self._data.threads.get(run_id)
        if found is None or found.source != source or not self._mine(found.tenant):
            return None
        return found

    async def open_threads(self, source: str) -> list[ThreadRecord]:
        """The runs of ``source`` whose end is not reported, oldest first."""
        found = [
            t
            for t in self._data.threads.values()
            if t.source == source and t.reported is None and self._mine(t.tenant)
        ]
        return sorted(found, key=lambda t: t.created)

    async def set_thread_status(self, run_id: str, status: str) -> bool:
        """Keep the run's status message, unless one is kept already."""
        found = self._data.threads.get(run_id)
        if found is None or found.status is not None or not self._mine(found.tenant):
            return False
        self._data.threads[run_id] = found.model_copy(update={"status": status})
        return True

    async def report_thread(self, run_id: str) -> bool:
        """Take the report of the run's end (True once)."""
        found = self._data.threads.get(run_id)
        if found is None or found.reported is not None or not self._mine(found.tenant):
            return False
        self._data.threads[run_id] = found.model_copy(update={"reported": time.time()})
        return True

    async def prune_threads(self, before: float) -> int:
        """Forget the threads of runs reported before ``before``."""
        old = [
            run_id
            for run_id, t in self._data.threads.items()
            if t.reported is not None and t.reported < before and self._mine(t.tenant)
        ]
        for run_id in old:
            del self._data.threads[run_id]
        return len(old)

    async def find_delivery(self, source: str, ids: tuple[str, ...]) -> str | None:
        """The run a delivery with one of ``ids`` started, or None."""
        for (tenant, kept_source, one), (run_id, _) in self._data.deliveries.items():
            if kept_source == source and one in ids and self._mine(tenant):
                return run_id
        return None

    async def prune_deliveries(self, before: float) -> int:
        """Forget the deliveries kept before ``before``; how many ids went."""
        old = [
            key
            for key, (_, created) in self._data.deliveries.items()
            if created < before and self._mine(key[0])
        ]
        for key in old:
            del self._data.deliveries[key]
        return len(old)

    async def put_document(
        self, kind: str, key: str, document: str, *, version: int, now: float
    ) -> int | None:
        """Keep ``document`` as ``kind``/``key`` if the one kept is at ``version`` (0:
        none yet); its new version, or None when another write came first."""
        check_document_name(kind, key)
        kept = self._data.documents.get((kind, key))
        if version == 0:
            tenant = self._creating("a document")
            if kept is not None:
                return None
            kept = DocumentRecord(
                kind=kind,
                key=key,
                tenant=tenant,
                version=0,
                created=now,
                updated=now,
                document=document,
            )
        elif kept is None or kept.version != version or not self._mine(kept.tenant):
            return None
        self._data.documents[(kind, key)] = kept.model_copy(
            update={"version": version + 1, "updated": now, "document": document}
        )
        self._changed(documents_key(kind))
        return version + 1

    async def load_document(self, kind: str, key: str) -> DocumentRecord | None:
        """A document, or None."""
        kept = self._data.documents.get((kind, key))
        return kept if kept is not None and self._mine(kept.tenant) else None

    async def list_documents(self, kind: str) -> list[DocumentRecord]:
        """The documents of ``kind``, oldest first."""
        found = [
            kept
            for (of, _), kept in self._data.documents.items()
            if of == kind and self._mine(kept.tenant)
        ]
        return sorted(found, key=lambda kept: (kept.created, kept.key))

    async def delete_document(self, kind: str, key: str) -> bool:
        """Forget a document; False when there was none."""
        if await self.load_document(kind, key) is None:
            return False
        del self._data.documents[(kind, key)]
        self._changed(documents_key(kind))
        return True

    async def save_run(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status (with ``claim``: only while it holds)."""
        if await self._held(run_id, claim):
            self._update(run_id, status=status, updated=updated, document=document)

    async def load_run(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        run = self._data.runs.get(run_id)
        return run if run is not None and self._mine(run.tenant) else None

    async def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        return sorted(self._runs(), key=lambda run: run.created, reverse=True)[:limit]

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        self._update(run_id, cancel_requested=True, notify=False)
        self._changed(control_key(run_id))

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False when it was answered already."""
        run = await self.load_run(run_id)
        if run is None or run.gate_decision is not None:
            return False
        self._update(run_id, gate_decision=decision, notify=False)
        self._changed(control_key(run_id))
        return True

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer."""
        self._update(run_id, gate_decision=None, notify=False)

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event; returns its sequence number in the run (from 1)."""
        if not await self._held(run_id, claim):
            raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
        events = self._data.events.setdefault(run_id, [])
        if events and events[-1].data == data:
            return events[-1].seq  # a retried append (each event holds its own time)
        seq = events[-1].seq + 1 if events else 1  # numbers go on after a prune, as in SQL
        events.append(EventRecord(seq=seq, time=time, type=kind, data=data))
        self._changed(run_id)
        return seq

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        if await self.load_run(run_id) is None:
            return []
        return [event for event in self._data.events.get(run_id, []) if event.seq > after]

    # The queue --------------------------------------------------------------------------

    async def claim_next_run(self, owner: str) -> RunRecord | None:
        """Take the next queued run, fairly across tenants, for server ``owner``."""
        queued = [run for run in self._data.runs.values() if run.status == "queued"]
        if not queued:
            return None
        busy: dict[str, int] = {}
        for run in self._data.runs.values():
            if run.status in ACTIVE:
                busy[run.tenant] = busy.get(run.tenant, 0) + 1
        chosen = min(queued, key=lambda run: (busy.get(run.tenant, 0), run.created, run.id))
        self._update(
            chosen.id,
            status="running",
            owner=owner,
            claim=chosen.claim + 1,
            updated=time.time(),
            notify=False,
        )
        return self._data.runs[chosen.id]

    async def count_runs(self, *statuses: str) -> int:
        """How many of this store's runs have one of ``statuses``."""
        return sum(1 for run in self._runs() if run.status in statuses)

    async def list_active_runs(self) -> list[RunRecord]:
        """Runs in progress, oldest first."""
        return sorted((r for r in self._runs() if r.status in ACTIVE), key=lambda r: r.created)

    async def requeue_run(self, run_id: str, document: str) -> bool:
        """Put a run in progress back in the queue."""
        run = await self.load_run(run_id)
        if run is None or run.status not in ACTIVE:
            return False
        self._update(run_id, status="queued", owner=None, claim=run.claim + 1, document=document)
        self._changed(control_key(run_id), QUEUE)
        return True

    async def cancel_queued(self, run_id: str, document: str) -> bool:
        """Cancel a run nobody claimed yet."""
        run = await self.load_run(run_id)
        if run is None or run.status != "queued":
            return False
        self._update(
            run_id,
            status="cancelled",
            cancel_requested=True,
            updated=time.time(),
            document=document,
        )
        self._changed(control_key(run_id))
        return True

    async def prunable_runs(self, ended_before: float) -> list[RunRecord]:
        """Runs that ended before ``ended_before`` with events to prune (any but their
        ``run_end``)."""
        return [
            run
            for run in self._runs()
            if run.status in FINISHED
            and run.updated < ended_before
            and any(event.type != "run_end" for event in self._data.events.get(run.id, []))
        ]

    async def prune_events(self, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end``."""
        if await self.load_run(run_id) is None:
            return
        events = self._data.events.get(run_id, [])
        self._data.events[run_id] = [event for event in events if event.type == "run_end"]

    async def save_checkpoint(
        self, run_id: str, node: str, data: bytes, claim: int | None = None
    ) -> None:
        """Keep the run's checkpoint after ``node`` (with ``claim``: only while it holds)."""
        if await self._held(run_id, claim):
            record = CheckpointRecord(node=node, created=time.time(), data=data)
            self._data.checkpoints[run_id] = record

    async def load_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The run's checkpoint, or None."""
        if await self.load_run(run_id) is None:
            return None
        return self._data.checkpoints.get(run_id)

    async def delete_checkpoint(self, run_id: str, claim: int | None = None) -> None:
        """Forget the run's checkpoint (with ``claim``: only while it holds)."""
        if await self._held(run_id, claim):
            self._data.checkpoints.pop(run_id, None)

    # Paused runs and provider limits ----------------------------------------------------

    async def pause_run(
        self,
        run_id: str,
        *,
        resume_at: float,
        updated: float,
        document: str,
        claim: int | None = None,
    ) -> None:
        """Keep a run paused until ``resume_at`` (with ``claim``: only while it holds)."""
        if await self._held(run_id, claim):
            self._update(run_id, status="waiting", owner=None, updated=updated, document=document)
            self._data.resume_at[run_id] = resume_at
            self._changed(RESUME)

    async def resume_due_runs(self, now: float) -> list[str]:
        """Queue again the paused runs whose time has come; their ids."""
        due = [
            run
            for run in self._runs()
            if run.status == "waiting" and self._data.resume_at.get(run.id, now + 1) <= now
        ]
        for run in due:
            self._data.resume_at.pop(run.id, None)
            self._update(run.id, status="queued", claim=run.claim + 1, updated=now)
            self._changed(control_key(run.id))
        if due:
            self._changed(QUEUE)
        return [run.id for run in due]

    async def next_resume(self) -> float | None:
        """The earliest time a paused run resumes, or None."""
        times = [
            self._data.resume_at[run.id]
            for run in self._runs()
            if run.status == "waiting" and run.id in self._data.resume_at
        ]
        return min(times, default=None)

    async def update_provider_limit(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of ``key`` (nothing runs in between)."""
        check_limit_key(key)
        document, wake = change(self._data.limits.get(key))
        if document is not None:
            self._data.limits[key] = document
        if wake:
            self._changed(key)

    # The local forge --------------------------------------------------------------------

    async def add_pull_request(
        self, repo: str, created: float, render: Callable[[int], str]
    ) -> PullRequestRecord:
        """Keep a pull request with the next number of ``repo``."""
        tenant = self._creating("a pull request")
        number = 1 + max(
            (pr.number for _, pr in self._data.pull_requests if pr.repo == repo), default=0
        )
        record = PullRequestRecord(repo=repo, number=number, created=created, data=render(number))
        self._data.pull_requests.append((tenant, record))
        return record

    async def list_pull_requests(self, repo: str | None = None) -> list[PullRequestRecord]:
        """Pull requests, newest first."""
        kept = [pr for tenant, pr in self._data.pull_requests if self._mine(tenant)]
        return [pr for pr in reversed(kept) if repo is None or pr.repo == repo]

    async def get_pull_request(self, repo: str, number: int) -> PullRequestRecord | None:
        """One pull request, or None."""
        found = [pr for pr in await self.list_pull_requests(repo) if pr.number == number]
        return found[0] if found else None

    async def update_pull_request(self, repo: str, number: int, data: str) -> bool:
        """Replace a kept pull request's JSON; False when this tenant has none such."""
        for index, (tenant, pr) in enumerate(self._data.pull_requests):
            if self._mine(tenant) and pr.repo == repo and pr.number == number:
                self._data.pull_requests[index] = (tenant, pr.model_copy(update={"data": data}))
                return True
        return False

    async def add_comment(self, comment: CommentRecord) -> CommentRecord:
        """Keep a comment the local forge made."""
        kept = comment.model_copy(update={"body": storable_text(comment.body)})
        self._data.comments.append((self._creating("a comment"), kept))
        return comment

    async def list_comments(self, target: str | None = None) -> list[CommentRecord]:
        """Comments, oldest first."""
        return [
            comment
            for tenant, comment in self._data.comments
            if self._mine(tenant) and (target is None or comment.target == target)
        ]

    # Forge credentials ------------------------------------------------------------------

    async def set_forge_token(
        self, forge: ForgeName, token: ForgeSecret, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's credential for ``forge``, sealed by ``cipher``."""
        tenant = self._creating("a forge token")
        text = sealable(token)
        for (owner, name), (sealed, _) in list(self._data.tokens.items())[:1]:
            cipher.open(sealed, f"the stored {name} token of {owner!r}")
        now = time.time()
        earlier = self._data.tokens.get((tenant, forge))
        created = earlier[1].created if earlier is not None else now
        listed = ForgeCredential(tenant=tenant, forge=forge, created=created, updated=now)
        self._data.tokens[(tenant, forge)] = (cipher.seal(text), listed)
        return listed

    async def delete_forge_token(self, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``."""
        tenant = self._creating("or delete a forge token")
        return self._data.tokens.pop((tenant, forge), None) is not None

    async def list_forge_credentials(self) -> list[ForgeCredential]:
        """Which forges this store's tenants have a token for."""
        return [
            listed for key, (_, listed) in sorted(self._data.tokens.items()) if self._mine(key[0])
        ]

    async def reveal_forge_token(self, forge: ForgeName, cipher: TokenCipher) -> ForgeSecret | None:
        """This tenant's credential for ``forge``, opened."""
        if self.tenant is None:
            raise StoreError("a store for all tenants reveals no token: use store.for_tenant")
        kept = self._data.tokens.get((self.tenant, forge))
        if kept is None:
            return None
        return forge_secret(cipher.open(kept[0], f"the {forge} token of tenant {self.tenant!r}"))

    async def replace_forge_grant(
        self, forge: ForgeName, old: OAuthGrant, new: OAuthGrant, cipher: TokenCipher
    ) -> bool:
        """Keep ``new`` in place of ``old``, if ``old`` is still the one kept."""
        stored = await self.reveal_forge_token(forge, cipher)
        if not isinstance(stored, OAuthGrant) or stored.refresh_token != old.refresh_token:
            return False
        assert self.tenant is not None  # reveal_forge_token refused a store of all tenants
        _, listed = self._data.tokens[(self.tenant, forge)]
        updated = listed.model_copy(update={"updated": time.time()})
        self._data.tokens[(self.tenant, forge)] = (cipher.seal(sealable(new)), updated)
        return True

    # API keys ---------------------------------------------------------------------------

    async def add_api_key(self, key: ApiKeyRecord, digest: str) -> None:
        """Keep an API key with the hash of its secret."""
        self._data.keys[key.id] = (key, digest)

    async def find_api_key(self, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and its hash, or None."""
        return self._data.keys.get(key_id)

    async def list_api_keys(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first."""
        keys = [key for key, _ in self._data.keys.values() if tenant in (None, key.tenant)]
        return sorted(keys, key=lambda key: key.created, reverse=True)

    async def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key."""
        kept = self._data.keys.get(key_id)
        if kept is None:
            return False
        self._data.keys[key_id] = (kept[0].model_copy(update={"revoked": True}), kept[1])
        return True

    # Plumbing ---------------------------------------------------------------------------

    def _mine(self, tenant: str) -> bool:
        return self.tenant is None or tenant == self.tenant

    def _runs(self) -> list[RunRecord]:
        return [run for run in self._data.runs.values() if self._mine(run.tenant)]

    def _creating(self, what: str) -> str:
        if self.tenant is None:
            raise StoreError(
                f"a store for all tenants cannot create {what}: use store.for_tenant(tenant)"
            )
        return self.tenant

    async def _held(self, run_id: str, claim: int | None) -> bool:
        """Whether the run is this store's; RunTaken if ``claim`` is not the run's."""
        run = await self.load_run(run_id)
        if run is not None:
            check_claim(run_id, run.claim, claim)
        return run is not None

    def _update(self, run_id: str, *, notify: bool = True, **values: object) -> None:
        run = self._data.runs.get(run_id)
        if run is None or not self._mine(run.tenant):
            return
        self._data.runs[run_id] = run.model_copy(update=values)
        if notify:
            self._changed(run_id)

    def _changed(self, *keys: str) -> None:
        for key in keys:
            self._hub.notify(key)
