"""Requests pending until their thread's run ends, on every store of the contract: one per
person and thread (a later one replaces its text), started once whichever process of the
store claims it (the claim is the transaction that keeps the run answering it); a start
refused for any reason (the queue full, the delivery seen) leaves it pending; a request read
before it was replaced starts nothing."""

from __future__ import annotations

import asyncio

import pytest

from golem.core.errors import DuplicateDelivery, PendingTaken, QueueFull
from golem.store import DeliveryRecord, PendingRecord, RunCap
from tests.store.conftest import Database, run

FULL = RunCap(statuses=("queued",), limit=0, reason="no room", retry_after=1)
PR = "octo/app!7"


def asked(person: str, text: str, *, created: float, waits_for: str = "run-1") -> PendingRecord:
    return PendingRecord(
        source="github", thread=PR, person=person, run_id=waits_for, asked_by=person.upper(),
        request=text, detail=f'{{"user": "{person}"}}', created=created,
    )  # fmt: skip


async def test_one_request_per_person_and_thread_the_latest_text_in_the_first_place(
    database: Database,
) -> None:
    store = await database.open("acme")
    first = await store.pending.keep(asked("ann", "rename it", created=1.0))
    await store.pending.keep(asked("bob", "and the README", created=2.0))
    again = await store.pending.keep(asked("ann", "rename it to add", created=3.0))
    await store.pending.keep(asked("ann", "elsewhere", created=4.0).model_copy(
        update={"thread": "octo/app!8"}))  # fmt: skip
    kept = await store.pending.in_thread("github", PR)
    assert [(p.person, p.request, p.tenant) for p in kept] == [
        ("ann", "rename it to add", "acme"), ("bob", "and the README", "acme"),
    ]  # fmt: skip
    assert (again.version - first.version, kept[0].created) == (1, 1.0)
    assert len(await store.pending.waiting("github")) == 3
    assert await store.pending.waiting("slack") == []


async def test_a_pending_request_starts_once_however_many_processes_claim_it(
    database: Database,
) -> None:
    ours, theirs = await database.open("acme"), await database.open("acme")
    ann = await ours.pending.keep(asked("ann", "rename it", created=1.0))
    await ours.pending.keep(asked("bob", "and the README", created=2.0))
    tries = await asyncio.gather(
        ours.runs.create(run("run-2"), pending=ann),
        theirs.runs.create(run("run-3"), pending=ann),
        return_exceptions=True,
    )
    started = [i for i, tried in enumerate(tries) if tried is None]
    assert len(started) == 1, tries
    assert all(isinstance(t, PendingTaken) for t in tries if t is not None)
    winner = ("run-2", "run-3")[started[0]]
    assert [(p.person, p.run_id) for p in await theirs.pending.in_thread("github", PR)] == [
        ("bob", winner)
    ]
    assert (await ours.runs.load(("run-3", "run-2")[started[0]])) is None


@pytest.mark.parametrize("refusal", ["full", "duplicate"])
async def test_a_refused_start_keeps_the_request_pending_and_its_thread_unchanged(
    database: Database, refusal: str
) -> None:
    store = await database.open("acme")
    delivery = DeliveryRecord(source="github", ids=("d-1",))
    await store.runs.create(run("run-0"), delivery=delivery)
    ann = await store.pending.keep(asked("ann", "rename it", created=1.0))
    bob = await store.pending.keep(asked("bob", "and the README", created=2.0))
    refused = {"cap": FULL} if refusal == "full" else {"delivery": delivery}
    with pytest.raises(QueueFull if refusal == "full" else DuplicateDelivery):
        await store.runs.create(run("run-2"), pending=ann, **refused)  # type: ignore[arg-type]
    assert await store.pending.in_thread("github", PR) == [ann, bob]
    assert await store.runs.load("run-2") is None


async def test_a_request_read_before_it_was_replaced_or_dropped_starts_nothing(
    database: Database,
) -> None:
    store = await database.open("acme")
    read = await store.pending.keep(asked("ann", "rename it", created=1.0))
    replaced = await store.pending.keep(asked("ann", "no: delete it", created=2.0))
    with pytest.raises(PendingTaken):
        await store.runs.create(run("run-2"), pending=read)
    assert not await store.pending.drop(read)
    assert await store.pending.in_thread("github", PR) == [replaced]
    assert await store.pending.drop(replaced)
    assert not await store.pending.drop(replaced)
    with pytest.raises(PendingTaken):
        await store.runs.create(run("run-3"), pending=replaced)
    assert await store.pending.in_thread("github", PR) == []


async def test_a_copy_of_an_earlier_request_never_matches_the_persons_next_one(
    database: Database,
) -> None:
    store = await database.open("acme")
    earlier = await store.pending.keep(asked("ann", "rename it", created=1.0))
    assert await store.pending.drop(earlier)  # started (claimed) by a server
    later = await store.pending.keep(asked("ann", "now the README", created=2.0))
    assert not await store.pending.drop(earlier)  # another server's stale copy
    with pytest.raises(PendingTaken):
        await store.runs.create(run("run-2"), pending=earlier)
    assert [p.request for p in await store.pending.in_thread("github", PR)] == [later.request]


async def test_a_request_waits_again_only_as_it_was_read_so_a_newer_text_is_never_lost(
    database: Database,
) -> None:
    store = await database.open("acme")
    read = await store.pending.keep(asked("ann", "rename it", created=1.0))
    bob = await store.pending.keep(asked("bob", "and the README", created=2.0))
    assert await store.pending.wait_again(bob, "run-2")  # as read: it waits for run-2 now
    newer = await store.pending.keep(asked("ann", "no: delete it", created=3.0, waits_for="run-2"))
    assert not await store.pending.wait_again(read, "run-3")  # a stale copy moves nothing
    kept = await store.pending.in_thread("github", PR)
    assert [(p.person, p.request, p.run_id, p.version) for p in kept] == [
        ("ann", "no: delete it", "run-2", newer.version),
        ("bob", "and the README", "run-2", bob.version),
    ]  # fmt: skip
    assert not await (await database.open("other")).pending.wait_again(newer, "run-4")
    assert await store.pending.wait_again(newer, "run-4")
    assert [p.run_id for p in await store.pending.in_thread("github", PR)] == ["run-4", "run-2"]
    assert await store.pending.drop(newer)  # its version unchanged by the wait
