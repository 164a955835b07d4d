"""The queue and paused runs (their model provider down): a server that starts leaves a
paused run to its resume time (it is nobody's to recover), and its one timer queues the
run once that time has come."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.state import Pause
from golem.core.config import GolemConfig
from golem.sandbox import LocalEngine
from golem.service.queue import RunQueue
from golem.store import QUEUE, SqlStore


async def paused(book: RunBook, run_id: str, resume_at: float) -> None:
    now = time.time()
    state = RunState(
        id=run_id, request=RunRequest(repo="/nowhere", task="x"), blueprint="b",
        blueprint_source="", status="waiting", current="implement",
        pause=Pause(node="implement", reason="529 overloaded_error", since=now,
                    resume_at=resume_at, node_started=now),
    )  # fmt: skip
    await book.create(state)
    await book.save(state)


async def test_a_starting_server_leaves_paused_runs_to_their_time_then_queues_them(
    tmp_path: Path,
) -> None:
    config = GolemConfig(state_dir=tmp_path)
    store = await SqlStore.open(config, tenant=None)
    try:
        book = RunBook(store.for_tenant("acme"))
        await paused(book, "run-later", time.time() + 3600)
        await paused(book, "run-due", time.time() - 1)
        queue = RunQueue(config, LocalEngine(config), store, "here:1")

        assert await queue.recover() == []  # paused: not a dead server's run

        with store.watch(QUEUE) as queued:
            timer = asyncio.ensure_future(queue._resume_paused())
            try:
                assert await queued.wait(30)
            finally:
                timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await timer
        due, later = await book.load("run-due"), await book.load("run-later")
    finally:
        await store.close()
    assert due is not None
    assert later is not None
    assert (due.status, later.status) == ("queued", "waiting")
