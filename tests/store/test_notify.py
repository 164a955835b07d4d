"""Change notification, on every store of the contract: a waiter is woken when what it
watches changes, also when another store on the same database (another server, ``golem
runs cancel``) changed it; over PostgreSQL that is LISTEN/NOTIFY, over a SQLite file the
stores' datagram sockets. A wait that returns False timed out: nobody woke it."""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
from pathlib import Path

from golem.store import QUEUE, SqlStore, Store, control_key
from tests.store.conftest import Database, run


async def test_a_follower_is_woken_by_an_event_another_store_appends(database: Database) -> None:
    follower, runner = await database.open(), await database.open()
    await runner.runs.create(run("run-1"))
    with follower.watch("run-1") as changed:
        changed.clear()
        await runner.runs.append_event("run-1", time=1.0, kind="note", data="{}")
        assert await changed.wait() is True
    assert [e.seq for e in await follower.runs.events("run-1")] == [1]


async def test_a_runner_is_woken_by_a_cancel_another_store_requests(database: Database) -> None:
    runner, person = await database.open(), await database.open()
    await runner.runs.create(run("run-1", status="running"))
    with runner.watch(control_key("run-1")) as asked:
        asked.clear()
        await person.runs.request_cancel("run-1")
        assert await asked.wait() is True
    loaded = await runner.runs.load("run-1")
    assert loaded is not None
    assert loaded.cancel_requested


async def test_a_gate_is_woken_by_an_answer_from_another_store(database: Database) -> None:
    runner, person = await database.open(), await database.open()
    await runner.runs.create(run("run-1", status="waiting"))
    with runner.watch(control_key("run-1")) as answered:
        answered.clear()
        assert await person.runs.decide_gate("run-1", "approved")
        assert await answered.wait() is True


async def test_an_idle_worker_is_woken_by_a_run_another_server_queues(database: Database) -> None:
    worker = await database.open(None)
    submitter = await database.open("acme")
    with worker.watch(QUEUE) as queued:
        queued.clear()
        assert await worker.queue.claim_next("host:1") is None
        await submitter.runs.create(run("run-1"))
        assert await queued.wait() is True
    claimed = await worker.queue.claim_next("host:1")
    assert claimed is not None
    assert claimed.id == "run-1"


async def test_waiters_of_one_run_are_each_woken(store: Store) -> None:
    await store.runs.create(run("run-1"))
    with store.watch("run-1") as first, store.watch("run-1") as second:
        first.clear()
        second.clear()
        await store.runs.save("run-1", status="running", updated=2.0, document="{}")
        assert await asyncio.gather(first.wait(), second.wait()) == [True, True]


def _cancel_in_another_process(url: str) -> None:
    async def cancel() -> None:
        store = await SqlStore.connect(url)
        try:
            await store.runs.request_cancel("run-1")
        finally:
            await store.close()

    asyncio.run(cancel())


async def test_a_cancel_from_another_process_wakes_the_runner(sql: Database) -> None:
    runner = await sql.open()
    await runner.runs.create(run("run-1", status="running"))
    with runner.watch(control_key("run-1")) as asked:
        asked.clear()
        process = multiprocessing.get_context("spawn").Process(
            target=_cancel_in_another_process, args=(sql.url,)
        )
        process.start()
        assert await asked.wait() is True
        await asyncio.to_thread(process.join, 60)
    assert process.exitcode == 0


SEND = (
    "import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
    "s.sendto(sys.argv[2].encode(), '\\0golem-store-' + sys.argv[1])"
)


async def test_a_datagram_from_another_user_wakes_nobody(tmp_path: Path) -> None:
    """A local process of another user (or a box on the host's network) can reach the
    abstract sockets but not wake a waiter: the kernel names the sender, which is checked."""
    database = tmp_path / "golem.db"
    store = await SqlStore.connect(f"sqlite:///{database}")
    try:
        [listener] = [p.name for p in (tmp_path / "golem.db.listeners").iterdir()]
        with store.watch("forged") as forged, store.watch("mine") as mine:
            forged.clear()
            mine.clear()
            stranger = await asyncio.create_subprocess_exec(
                "/usr/bin/python3", "-c", SEND, listener, "forged", user="nobody", cwd="/"
            )
            assert await stranger.wait() == 0
            own = await asyncio.create_subprocess_exec(sys.executable, "-c", SEND, listener, "mine")
            assert await own.wait() == 0
            assert await mine.wait() is True  # read after the stranger's, which came first
            assert not forged.is_set()
    finally:
        await store.close()
