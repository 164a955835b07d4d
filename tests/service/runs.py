"""Runs to keep in a store, and threads that act on one database at once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from golem.blueprint.state import RunRequest, RunState

T = TypeVar("T")


def new_run(run_id: str = "run-000000000001", *, created: float | None = None) -> RunState:
    """A queued run of the minion blueprint (created now, or at ``created``)."""
    state = RunState(
        id=run_id,
        request=RunRequest(repo="/srv/repo", task="fix it"),
        blueprint="minion",
        blueprint_source="name: minion\n",
    )
    if created is not None:
        state.created = created
    return state


def at_once(workers: int, work: Callable[[int], T]) -> list[T]:
    """``work(0)`` ... ``work(workers - 1)`` in threads released together; their results."""
    barrier = threading.Barrier(workers)

    def released(index: int) -> T:
        barrier.wait(timeout=60)
        return work(index)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(released, range(workers)))
