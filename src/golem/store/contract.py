"""The store's contract: what the layers above (blueprint, forge, service, cli) may ask of
golem's store. ``SqlStore`` (SQLite, PostgreSQL) and ``MemoryStore`` (tests, demos) both
keep it, with the same tenant scoping: a store acts for one tenant, or for all of them
(``tenant=None``), which reads everything and creates nothing."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from golem.store.cipher import TokenCipher
from golem.store.notify import Signal
from golem.store.provider_limits import LimitChange
from golem.store.records import (
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
)

__all__ = ["Store"]


class Store(Protocol):
    """Runs and their events, the queue, keys, credentials and the local forge's records."""

    tenant: str | None

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

    async def create_run(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
    ) -> None:
        """Keep a new run of this store's tenant; with ``cap``, only if the store's runs
        leave it room (else QueueFull); with ``delivery``, only if no run was kept with one
        of its ids (else DuplicateDelivery naming that run), the delivery kept with it;
        with ``thread``, the thread it was asked in (a chat source's); all atomically
        across the processes sharing the store."""
        ...

    async def find_delivery(self, source: str, ids: tuple[str, ...]) -> str | None:
        """The run a webhook delivery with one of ``ids`` started, or None."""
        ...

    async def handle_once(self, delivery: DeliveryRecord) -> bool:
        """Keep ``delivery`` as handled without starting a run (an answer said once, as a
        refusal); False when one of its ids was kept already, by any process."""
        ...

    async def thread_runs(self, source: str, thread: str) -> list[ThreadRecord]:
        """The runs asked for in a source's ``thread``, newest first."""
        ...

    async def thread_of(self, source: str, run_id: str) -> ThreadRecord | None:
        """Where ``run_id`` was asked for in ``source``, or None."""
        ...

    async def open_threads(self, source: str) -> list[ThreadRecord]:
        """The runs of ``source`` whose end is not reported yet, oldest first."""
        ...

    async def set_thread_status(self, run_id: str, status: str) -> bool:
        """Keep the message that shows the run's progress, unless one is kept already."""
        ...

    async def report_thread(self, run_id: str) -> bool:
        """Take the report of the run's end: True once, for one caller of any process."""
        ...

    async def prune_threads(self, before: float) -> int:
        """Forget the threads of runs whose end was reported before ``before``."""
        ...

    async def prune_deliveries(self, before: float) -> int:
        """Forget the deliveries kept before ``before`` (a time); how many ids went."""
        ...

    async def put_document(
        self, kind: str, key: str, document: str, *, version: int, now: float
    ) -> int | None:
        """Keep ``document`` as ``kind``/``key`` if the one kept is at ``version`` (0: none
        yet; this store's tenant makes it); its new version, or None when another write came
        first (read it again). Announced under ``documents_key(kind)``."""
        ...

    async def load_document(self, kind: str, key: str) -> DocumentRecord | None:
        """A document, or None."""
        ...

    async def list_documents(self, kind: str) -> list[DocumentRecord]:
        """The documents of ``kind``, oldest first."""
        ...

    async def delete_document(self, kind: str, key: str) -> bool:
        """Forget a document; False when there was none."""
        ...

    async def save_run(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status (cancel request, gate answer, owner kept);
        with ``claim``, only while the run's claim is that one (else RunTaken)."""
        ...

    async def load_run(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        ...

    async def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        ...

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        ...

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False if it was answered already."""
        ...

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        ...

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event; returns its sequence number in the run (from 1). The same
        ``data`` as the run's last event is that event, kept once (a retried write). With
        ``claim``, only while the run's claim is that one (else RunTaken)."""
        ...

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        ...

    async def claim_next_run(self, owner: str) -> RunRecord | None:
        """Take the next queued run (fairly across tenants) for server ``owner``; its
        claim goes up by one."""
        ...

    async def count_runs(self, *statuses: str) -> int:
        """How many runs have one of ``statuses``."""
        ...

    async def list_active_runs(self) -> list[RunRecord]:
        """Runs in progress, oldest first."""
        ...

    async def requeue_run(self, run_id: str, document: str) -> bool:
        """Put a run in progress back in the queue (its claim goes up by one, so that its
        runner's writes are refused from now on); False if it was not in progress."""
        ...

    async def cancel_queued(self, run_id: str, document: str) -> bool:
        """Cancel a run nobody claimed yet; False if it was not queued."""
        ...

    async def prunable_runs(self, ended_before: float) -> list[RunRecord]:
        """Runs that ended before ``ended_before`` with events to prune (any but their
        ``run_end``)."""
        ...

    async def prune_events(self, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end`` (a follower of the run still
        learns how it ended)."""
        ...

    async def save_checkpoint(
        self, run_id: str, node: str, data: bytes, claim: int | None = None
    ) -> None:
        """Keep ``data`` as the run's checkpoint after blueprint node ``node`` (replacing
        the one before); with ``claim``, only while the run's claim is that one (else
        RunTaken)."""
        ...

    async def load_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        """The run's checkpoint, or None."""
        ...

    async def delete_checkpoint(self, run_id: str, claim: int | None = None) -> None:
        """Forget the run's checkpoint; with ``claim``, only while the run's claim is that
        one (else RunTaken)."""
        ...

    async def pause_run(
        self,
        run_id: str,
        *,
        resume_at: float,
        updated: float,
        document: str,
        claim: int | None = None,
    ) -> None:
        """Keep a run paused (status waiting, no owner) until ``resume_at``, with
        ``document`` as its state; with ``claim``, only while the run's claim is that one
        (else RunTaken). Announced under ``RESUME``."""
        ...

    async def resume_due_runs(self, now: float) -> list[str]:
        """Queue again the paused runs whose resume time is ``now`` or before (their
        claims go up by one); their ids."""
        ...

    async def next_resume(self) -> float | None:
        """The earliest time a paused run resumes, or None when none waits."""
        ...

    async def update_provider_limit(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of a provider limiter's ``key`` (``*limit:``)
        atomically across every process sharing the store; its watchers are woken when
        the change asks (``golem.agent.models.limiter``)."""
        ...

    async def add_pull_request(
        self, repo: str, created: float, render: Callable[[int], str]
    ) -> PullRequestRecord:
        """Keep a pull request with the next number of ``repo`` (``render``: its JSON)."""
        ...

    async def list_pull_requests(self, repo: str | None = None) -> list[PullRequestRecord]:
        """Pull requests, newest first."""
        ...

    async def get_pull_request(self, repo: str, number: int) -> PullRequestRecord | None:
        """One pull request, or None."""
        ...

    async def update_pull_request(self, repo: str, number: int, data: str) -> bool:
        """Replace a kept pull request's JSON (its labels changed); False when none."""
        ...

    async def add_comment(self, comment: CommentRecord) -> CommentRecord:
        """Keep a comment the local forge made."""
        ...

    async def list_comments(self, target: str | None = None) -> list[CommentRecord]:
        """Comments, oldest first."""
        ...

    async def set_forge_token(
        self, forge: ForgeName, token: ForgeSecret, cipher: TokenCipher
    ) -> ForgeCredential:
        """Keep this tenant's credential for ``forge`` (a token, an App's key, an OAuth
        grant), sealed."""
        ...

    async def delete_forge_token(self, forge: ForgeName) -> bool:
        """Forget this tenant's token for ``forge``."""
        ...

    async def list_forge_credentials(self) -> list[ForgeCredential]:
        """Which forges have a token (never the tokens)."""
        ...

    async def reveal_forge_token(self, forge: ForgeName, cipher: TokenCipher) -> ForgeSecret | None:
        """This tenant's credential for ``forge``, opened; for its runner only."""
        ...

    async def replace_forge_grant(
        self, forge: ForgeName, old: OAuthGrant, new: OAuthGrant, cipher: TokenCipher
    ) -> bool:
        """Keep a refreshed OAuth grant in place of ``old``, if ``old`` is still the one
        kept (False: another refresh came first)."""
        ...

    async def add_api_key(self, key: ApiKeyRecord, digest: str) -> None:
        """Keep an API key with the hash of its secret."""
        ...

    async def find_api_key(self, key_id: str) -> tuple[ApiKeyRecord, str] | None:
        """A key and its hash, or None."""
        ...

    async def list_api_keys(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first."""
        ...

    async def revoke_api_key(self, key_id: str) -> bool:
        """Revoke a key; False when there is none."""
        ...
