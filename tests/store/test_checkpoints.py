"""Run checkpoints on every store of the contract: bytes kept exactly, replaced by the next,
gone with the run's end, and another tenant's run neither readable nor writable."""

from __future__ import annotations

import os

from golem.store import Store
from tests.store.conftest import Database, run


async def test_a_checkpoint_round_trips_byte_for_byte_and_the_next_replaces_it(
    store: Store,
) -> None:
    await store.create_run(run("run-1"))
    assert await store.load_checkpoint("run-1") is None
    first = os.urandom(3 * 1024 * 1024) + b"\x00\xff"  # binary, larger than a page
    await store.save_checkpoint("run-1", "prepare", first)
    kept = await store.load_checkpoint("run-1")
    assert kept is not None and (kept.node, kept.data) == ("prepare", first)
    await store.save_checkpoint("run-1", "implement", b"second")
    kept = await store.load_checkpoint("run-1")
    assert kept is not None and (kept.node, kept.data) == ("implement", b"second")
    await store.delete_checkpoint("run-1")
    assert await store.load_checkpoint("run-1") is None


async def test_a_checkpoint_is_its_tenants_alone(database: Database) -> None:
    mine, theirs = await database.open("acme"), await database.open("rival")
    await mine.create_run(run("run-1"))
    await mine.save_checkpoint("run-1", "prepare", b"acme's checkout")
    assert await theirs.load_checkpoint("run-1") is None
    await theirs.save_checkpoint("run-1", "ship", b"overwritten")
    await theirs.delete_checkpoint("run-1")
    kept = await mine.load_checkpoint("run-1")
    assert kept is not None and kept.data == b"acme's checkout"
    everyone = await database.open(None)
    seen = await everyone.load_checkpoint("run-1")
    assert seen is not None and seen.node == "prepare"
