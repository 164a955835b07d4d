"""Documents the layers above keep (an automation's schedule, a goal loop, a tracker's link
to a run): kept per tenant under a kind and a key, and changed only as their writer read
them: a write naming a version that is no longer the kept one changes nothing, however many
writers race, on one process or several sharing the database."""

from __future__ import annotations

import asyncio

import pytest

from golem.core.errors import StoreError
from golem.store import documents_key
from tests.store.conftest import Database


async def test_a_document_is_made_once_and_changed_only_at_the_version_read(
    database: Database,
) -> None:
    store = await database.open("acme")
    assert await store.documents.put("loop", "l-1", '{"n": 1}', version=0, now=1.0) == 1
    assert await store.documents.put("loop", "l-1", '{"n": 9}', version=0, now=2.0) is None
    assert await store.documents.put("loop", "l-1", '{"n": 2}', version=1, now=3.0) == 2
    assert await store.documents.put("loop", "l-1", '{"n": 3}', version=1, now=4.0) is None
    kept = await store.documents.load("loop", "l-1")
    assert kept is not None
    assert (kept.document, kept.version, kept.tenant) == ('{"n": 2}', 2, "acme")
    assert (kept.created, kept.updated) == (1.0, 3.0)
    assert await store.documents.load("automation", "l-1") is None  # kinds are apart


async def test_racing_writers_of_one_version_leave_exactly_one_write(database: Database) -> None:
    writers = [await database.open("acme") for _ in range(6)]
    await writers[0].documents.put("automation", "nightly", "0", version=0, now=1.0)

    async def write(number: int) -> int | None:
        return await writers[number].documents.put(
            "automation", "nightly", str(number), version=1, now=2.0
        )

    won = await asyncio.gather(*(write(number) for number in range(6)))
    assert sorted(won, key=lambda v: v or 0) == [None] * 5 + [2]
    kept = await writers[0].documents.load("automation", "nightly")
    assert kept is not None
    assert kept.document == str(won.index(2))


async def test_a_tenants_documents_are_its_own(database: Database) -> None:
    acme, other = await database.open("acme"), await database.open("other")
    everyone = await database.open(None)
    await acme.documents.put("loop", "l-1", "acme's", version=0, now=1.0)
    assert await other.documents.load("loop", "l-1") is None
    assert await other.documents.of_kind("loop") == []
    assert await other.documents.put("loop", "l-1", "other's", version=1, now=2.0) is None
    assert not await other.documents.delete("loop", "l-1")
    assert [d.document for d in await everyone.documents.of_kind("loop")] == ["acme's"]
    with pytest.raises(StoreError, match="for_tenant"):
        await everyone.documents.put("loop", "l-2", "nobody's", version=0, now=1.0)


async def test_documents_are_listed_oldest_first_and_deleted(database: Database) -> None:
    store = await database.open()
    for number, key in enumerate(("c", "a", "b")):
        await store.documents.put("automation", key, key, version=0, now=float(number))
    assert [d.key for d in await store.documents.of_kind("automation")] == ["c", "a", "b"]
    assert await store.documents.delete("automation", "a")
    assert not await store.documents.delete("automation", "a")
    assert [d.key for d in await store.documents.of_kind("automation")] == ["c", "b"]


async def test_a_change_wakes_the_watchers_of_its_kind(database: Database) -> None:
    store = await database.open()
    with store.watch(documents_key("loop")) as changed:
        changed.clear()
        await store.documents.put("loop", "l-1", "{}", version=0, now=1.0)
        assert await changed.wait(5)


@pytest.mark.parametrize(
    ("kind", "key"), [("Loop", "k"), ("", "k"), ("loop", ""), ("loop", "k" * 201)]
)
async def test_a_bad_name_is_refused(database: Database, kind: str, key: str) -> None:
    store = await database.open()
    with pytest.raises(StoreError):
        await store.documents.put(kind, key, "{}", version=0, now=1.0)
