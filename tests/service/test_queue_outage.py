"""A run claimed just as the store goes away is not failed for it: its worker waits for the
store and runs it from where it is (here, to the end its own blueprint gives it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError, StoreUnavailable
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
        claimed = await store.queue.claim_next("here:1")
        assert claimed is not None
        # A worker's turn with the run (no worker loop left running): the outage is waited
        # out, and the run goes on to its own end, a blueprint that does not parse.
        with pytest.raises(ConfigError, match="not valid YAML"):
            async with asyncio.timeout(DEADLINE):
                await queue._carry(claimed, 0)
        assert access.asked == 2  # asked again once the store was back
    finally:
        await store.close()
