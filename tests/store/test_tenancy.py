"""Every repository of a tenant's store is that tenant's alone: another tenant, calling each
call of each repository on the first one's records (its run ids, delivery ids, thread,
document, pull request, forge), reads nothing of them and changes nothing of them, on every
store. The calls are taken from the repositories' protocols, so a new call (or a new
repository) without its case here fails this test until it says what another tenant gets."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from golem.core.errors import RunNotFound
from golem.store import (
    CommentRecord,
    DeliveryRecord,
    OAuthGrant,
    PendingRecord,
    Store,
    ThreadRecord,
    TokenCipher,
)
from tests.store.conftest import Database, run

FINISHED, ACTIVE, QUEUED, PAUSED = "acme-done", "acme-active", "acme-queued", "acme-paused"
LATER = 10.0**10  # a time after everything
GRANT = OAuthGrant(access_token="acme-access", refresh_token="acme-refresh")  # noqa: S106
PENDING = PendingRecord(
    source="github", thread="acme/repo!1", person="ann", run_id=ACTIVE, request="acme's"
)
KEY_ENV = "GOLEM_TEST_STORE_TENANCY_KEY"

Call = Callable[[Store, TokenCipher], Awaitable[object]]

READS: dict[str, Call] = {
    "runs.load": lambda s, c: s.runs.load(FINISHED),
    "runs.newest": lambda s, c: s.runs.newest(),
    "runs.count": lambda s, c: s.runs.count("queued", "running", "waiting", "succeeded"),
    "runs.active": lambda s, c: s.runs.active(),
    "runs.events": lambda s, c: s.runs.events(FINISHED),
    "runs.prunable": lambda s, c: s.runs.prunable(LATER),
    "queue.next_resume": lambda s, c: s.queue.next_resume(),
    "checkpoints.load": lambda s, c: s.checkpoints.load(ACTIVE),
    "deliveries.find": lambda s, c: s.deliveries.find("github", ("acme-delivery",)),
    "threads.runs_in": lambda s, c: s.threads.runs_in("slack", "C1:1.1"),
    "threads.of_run": lambda s, c: s.threads.of_run("slack", FINISHED),
    "threads.unreported": lambda s, c: s.threads.unreported("slack"),
    "pending.in_thread": lambda s, c: s.pending.in_thread("github", "acme/repo!1"),
    "pending.waiting": lambda s, c: s.pending.waiting("github"),
    "documents.load": lambda s, c: s.documents.load("automation", "nightly"),
    "documents.of_kind": lambda s, c: s.documents.of_kind("automation"),
    "forge.pull_requests": lambda s, c: s.forge.pull_requests(),
    "forge.pull_request": lambda s, c: s.forge.pull_request("acme/repo", 1),
    "forge.comments": lambda s, c: s.forge.comments(),
    "credentials.all": lambda s, c: s.credentials.all(),
    "credentials.reveal": lambda s, c: s.credentials.reveal("gitlab", c),
}
"""What another tenant reads of the first one's records: nothing (None, empty, 0)."""

WRITES: dict[str, Call] = {
    "runs.save": lambda s, c: s.runs.save(FINISHED, status="failed", updated=2.0, document="{}"),
    "runs.request_cancel": lambda s, c: s.runs.request_cancel(ACTIVE),
    "runs.decide_gate": lambda s, c: s.runs.decide_gate(ACTIVE, "rejected"),
    "runs.clear_gate": lambda s, c: s.runs.clear_gate(PAUSED),
    "runs.append_event": lambda s, c: s.runs.append_event(
        FINISHED, time=2.0, kind="note", data='{"by": "other"}'
    ),
    "runs.prune_events": lambda s, c: s.runs.prune_events(FINISHED),
    "queue.requeue": lambda s, c: s.queue.requeue(ACTIVE, "{}"),
    "queue.cancel_queued": lambda s, c: s.queue.cancel_queued(QUEUED, "{}"),
    "queue.pause": lambda s, c: s.queue.pause(QUEUED, resume_at=1.0, updated=2.0, document="{}"),
    "queue.resume_due": lambda s, c: s.queue.resume_due(LATER),
    "checkpoints.save": lambda s, c: s.checkpoints.save(ACTIVE, "other", b"theirs"),
    "checkpoints.delete": lambda s, c: s.checkpoints.delete(ACTIVE),
    "deliveries.prune": lambda s, c: s.deliveries.prune(LATER),
    "threads.set_status": lambda s, c: s.threads.set_status(QUEUED, "other's"),
    "threads.report": lambda s, c: s.threads.report(QUEUED),
    "threads.prune": lambda s, c: s.threads.prune(LATER),
    "pending.drop": lambda s, c: s.pending.drop(PENDING),
    "pending.wait_again": lambda s, c: s.pending.wait_again(PENDING, "run-theirs"),
    "documents.put": lambda s, c: s.documents.put(
        "automation", "nightly", "{}", version=1, now=2.0
    ),
    "documents.delete": lambda s, c: s.documents.delete("automation", "nightly"),
    "forge.update_pull_request": lambda s, c: s.forge.update_pull_request("acme/repo", 1, "{}"),
    "credentials.delete": lambda s, c: s.credentials.delete("gitlab"),
    "credentials.replace_grant": lambda s, c: s.credentials.replace_grant(
        "gitlab", GRANT, GRANT.model_copy(update={"refresh_token": "other"}), c
    ),
}
"""What another tenant tries on the first one's records: it changes nothing of them (a
falsy answer, or RunNotFound)."""

SHARED = {
    "runs.create": "creates the caller's own run",
    "queue.claim_next": "a server claims any tenant's run (fairly across tenants)",
    "deliveries.handle_once": "keeps the caller's own delivery",
    "pending.keep": "keeps the caller's own pending request",
    "limits.update": "a provider limiter is the provider's, whoever calls it",
    "forge.add_pull_request": "keeps the caller's own pull request",
    "forge.add_comment": "keeps the caller's own comment",
    "credentials.put": "keeps the caller's own credential",
    "keys.add": "API keys span tenants: each says whose it is (the server's KeyStore)",
    "keys.find": "API keys span tenants",
    "keys.all": "API keys span tenants",
    "keys.revoke": "API keys span tenants",
}
"""Calls that act on the caller's own records, or on no tenant's."""


def repository_calls() -> set[str]:
    """Every call of every repository of the store's contract."""
    calls = set()
    for name, member in vars(Store).items():
        if isinstance(member, property) and name != "tenant":
            contract = get_type_hints(member.fget)["return"]
            calls |= {
                f"{name}.{call}"
                for call, method in vars(contract).items()
                if inspect.iscoroutinefunction(method)
            }
    return calls


def test_every_call_of_every_repository_has_a_tenancy_case() -> None:
    assert repository_calls() == set(READS) | set(WRITES) | set(SHARED)
    assert not set(READS) & set(WRITES)


async def fill(acme: Store, cipher: TokenCipher) -> None:
    """One record of acme's in every repository."""
    await acme.runs.create(run(ACTIVE, created=1.0))
    assert (await acme.queue.claim_next("host:1")) is not None
    await acme.checkpoints.save(ACTIVE, "plan", b"acme's")
    delivery = DeliveryRecord(source="github", ids=("acme-delivery",))
    thread = ThreadRecord(source="slack", thread="C1:1.1")
    await acme.runs.create(run(FINISHED, created=2.0), delivery=delivery, thread=thread)
    await acme.runs.append_event(FINISHED, time=1.0, kind="note", data="{}")
    await acme.runs.append_event(FINISHED, time=2.0, kind="run_end", data="{}")
    await acme.runs.save(FINISHED, status="succeeded", updated=3.0, document="{}")
    await acme.threads.report(FINISHED)
    await acme.runs.create(
        run(QUEUED, created=3.0), thread=ThreadRecord(source="slack", thread="C2")
    )
    await acme.runs.create(run(PAUSED, created=4.0))
    await acme.queue.pause(PAUSED, resume_at=5.0, updated=4.0, document="{}")
    await acme.runs.decide_gate(PAUSED, "approved")
    await acme.documents.put("automation", "nightly", '{"acme": 1}', version=0, now=1.0)
    await acme.forge.add_pull_request("acme/repo", 1.0, lambda number: f'{{"n": {number}}}')
    await acme.forge.add_comment(CommentRecord(target="acme/repo#1", body="acme's", created=1.0))
    await acme.credentials.put("gitlab", GRANT, cipher)
    await acme.pending.keep(PENDING)


async def everything(store: Store, cipher: TokenCipher) -> list[Any]:
    """All a store reads, every repository's."""
    seen = [await read(store, cipher) for read in READS.values()]
    for run_id in (FINISHED, ACTIVE, QUEUED, PAUSED):
        seen += [await store.runs.load(run_id), await store.runs.events(run_id)]
        seen.append(await store.threads.of_run("slack", run_id))
    return seen


async def test_another_tenant_reads_nothing_and_changes_nothing_in_any_repository(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other tenants: one whose name differs by case, one a SQL pattern would match."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    cipher = TokenCipher(KEY_ENV, tmp_path / "credentials.key")
    acme = await database.open("acme")
    await fill(acme, cipher)
    before = await everything(acme, cipher)
    for other_tenant in ("ACME", "acme%"):
        other = await database.open(other_tenant)
        for name, read in READS.items():
            assert not await read(other, cipher), f"{other_tenant} read acme's records: {name}"
        for name, write in WRITES.items():
            try:
                answer = await write(other, cipher)
            except RunNotFound:
                continue
            assert not answer, f"{other_tenant} changed acme's records: {name} answered {answer}"
    assert await everything(acme, cipher) == before
    assert await everything(await database.open("acme"), cipher) == before  # as kept
