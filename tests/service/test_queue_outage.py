"""A run claimed just as the store goes away is not failed for it: the worker waits for the
store and runs it from where it is (here, to the end its own blueprint gives it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core.config import GolemConfig
from golem.core.errors import StoreUnavailable
from golem.core.ids import new_id
from golem.forge.auth import ForgeCredentials
from golem.sandbox import LocalEngine
from golem.service.forge_access import ForgeAccess
from golem.service.queue import RunQueue
from golem.store import SqlStore

DEADLINE = 60.0


class AwayOnce(ForgeAccess):
    """The tenant's tokens, the first read of which meets the store away."""

    asked = 0

    async def require(self, tenant: str, forge: str, why: str) -> ForgeCredentials:
        self.asked += 1
        if self.asked == 1:
            raise StoreUnavailable("the database did not answer within 10s")
        return await super().require(tenant, forge, why)


async def test_a_run_claimed_as_the_store_goes_away_is_not_failed_for_it(
    tmp_path: Path,
) -> None:
    config = GolemConfig(state_dir=tmp_path)
    store = await SqlStore.open(config, tenant=None)
    try:
        book = RunBook(store.for_tenant("acme"))
        request = RunRequest(repo="/nowhere", task="x")
        state = RunState(id=new_id("run"), request=request, blueprint="old",
                         blueprint_source="nodes: [", current="prepare")  # fmt: skip
        await book.create(state)
        queue = RunQueue(config, LocalEngine(config), store, "here:1")
        access = queue.forge_access = AwayOnce(config, store)
        await queue.start()
        try:
            async with asyncio.timeout(DEADLINE):
                with book.watch(state.id) as changed:
                    while (ended := await book.load(state.id)) is None or not ended.finished:
                        changed.clear()
                        await changed.wait()
        finally:
            await queue.stop()
        assert access.asked == 2  # asked again once the store was back
        assert ended.status == "failed"
        assert "not valid YAML" in (ended.error or "")  # the run's own end, not the outage's
    finally:
        await store.close()
