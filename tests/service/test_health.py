"""``/healthz`` needs no key, so a flood of it must not flood the database: callers at once
share one ping of the store, and a store that fails or hangs makes it ``degraded``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import cast

from golem.core.config import GolemConfig
from golem.core.errors import StoreUnavailable
from golem.service.health import StoreProbe
from golem.store import SqlStore, Store


class CountedPings:
    """A real SQLite store whose pings are counted, and held until let go."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pings = 0
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def ping(self) -> None:
        self.pings += 1
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        await self.store.ping()


async def test_callers_at_once_share_one_ping_of_the_store(tmp_path: Path) -> None:
    store = await SqlStore.open(GolemConfig(state_dir=tmp_path), tenant=None)
    try:
        counted = CountedPings(store)
        probe = StoreProbe(cast(Store, counted), "here:1")
        callers = [asyncio.ensure_future(probe.health()) for _ in range(200)]
        await asyncio.sleep(0)  # every caller reaches the ping in flight
        counted.release.set()
        answers = await asyncio.gather(*callers)
        assert counted.pings == 1
        assert {a.status for a in answers} == {"ok"}
    finally:
        await store.close()


async def test_a_store_that_fails_makes_health_degraded_with_why(tmp_path: Path) -> None:
    store = await SqlStore.open(GolemConfig(state_dir=tmp_path), tenant=None)
    try:
        counted = CountedPings(store)
        counted.fail = StoreUnavailable("the database did not answer within 10s")
        counted.release.set()
        answer = await StoreProbe(cast(Store, counted), "here:1").health()
        assert answer.status == "degraded"
        assert "did not answer" in str(answer.reason)
    finally:
        await store.close()


async def test_a_caller_that_leaves_does_not_cancel_the_others_ping(tmp_path: Path) -> None:
    store = await SqlStore.open(GolemConfig(state_dir=tmp_path), tenant=None)
    try:
        counted = CountedPings(store)
        probe = StoreProbe(cast(Store, counted), "here:1")
        leaving = asyncio.ensure_future(probe.health())
        staying = asyncio.ensure_future(probe.health())
        await asyncio.sleep(0)
        leaving.cancel()
        counted.release.set()
        assert (await staying).status == "ok"
        assert counted.pings == 1
    finally:
        await store.close()
