"""Run checkpoints on every store of the contract: bytes kept exactly, replaced by the next,
gone with the run's end, and another tenant's run neither readable nor writable."""

from __future__ import annotations

import os

from golem.store import Store
from tests.store.conftest import Database, run


async def test_a_checkpoint_round_trips_byte_for_byte_and_the_next_replaces_it(
    store: Store,
) -> None:
    await store.runs.create(run("run-1"))
    assert await store.checkpoints.load("run-1") is None
    first = os.urandom(3 * 1024 * 1024) + b"\x00\xff"  # binary, larger than a page
    await store.checkpoints.save("run-1", "prepare", first)
    kept = await store.checkpoints.load("run-1")
    assert kept is not None
    assert (kept.node, kept.data) == ("prepare", first)
    await store.checkpoints.save("run-1", "implement", b"second")
    kept = await store.checkpoints.load("run-1")
    assert kept is not None
    assert (kept.node, kept.data) == ("implement", b"second")
    await store.checkpoints.delete("run-1")
    assert await store.checkpoints.load("run-1") is None


async def test_a_checkpoint_is_its_tenants_alone(database: Database) -> None:
    mine, theirs = await database.open("acme"), await database.open("rival")
    await mine.runs.create(run("run-1"))
    await mine.checkpoints.save("run-1", "prepare", b"acme's checkout")
    assert await theirs.checkpoints.load("run-1") is None
    await theirs.checkpoints.save("run-1", "ship", b"overwritten")
    await theirs.checkpoints.delete("run-1")
    kept = await mine.checkpoints.load("run-1")
    assert kept is not None
    assert kept.data == b"acme's checkout"
    everyone = await database.open(None)
    seen = await everyone.checkpoints.load("run-1")
    assert seen is not None
    assert seen.node == "prepare"
