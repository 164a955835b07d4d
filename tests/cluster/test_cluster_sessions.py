"""Session parity on a Ray cluster: the engine contract (tests/sandbox/engine_contract.py)
run against ClusterEngine, whose sessions Ray places on three nodes and whose calls go to
the node's box host; and what only a cluster has: sessions spread over the nodes, a full
cluster that queues and drains."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.cluster import ClusterEngine
from golem.cluster.engine import PLACEMENT_CHECK
from golem.core import GolemConfig
from golem.core.errors import NoNodeFits, Problem
from tests.cluster.conftest import NODES, SLOTS, cluster_settings
from tests.sandbox.engine_contract import Scenario, contract

pytestmark = pytest.mark.bwrap


@pytest.fixture
def cluster_config(ray_cluster: object, cluster_state: Path) -> GolemConfig:
    return cluster_settings(cluster_state / "control", cluster_state)


@pytest.fixture
async def any_engine(cluster_config: GolemConfig) -> AsyncIterator[ClusterEngine]:
    """The cluster's engine (the engine the contract runs on)."""
    async with ClusterEngine(cluster_config) as engine:
        yield engine


@contract
async def test_each_engine_keeps_the_engine_contract(
    any_engine: ClusterEngine, scenario: Scenario, tmp_path: Path
) -> None:
    await scenario(any_engine, tmp_path)


async def test_sessions_spread_over_the_nodes_and_a_full_cluster_queues_then_drains(
    any_engine: ClusterEngine, cluster_state: Path
) -> None:
    full = [await any_engine.create_session() for _ in range(NODES * SLOTS)]
    nodes = {any_engine.node_of(box.id) for box in full}
    assert len(nodes) == NODES
    waiting = asyncio.ensure_future(any_engine.create_session())
    assert await any_engine.waiting(at_least=1) == ["NO_RESOURCES"]  # Ray has no slot
    assert not waiting.done()
    impatient = cluster_settings(
        cluster_state / "control", cluster_state, lease_timeout=PLACEMENT_CHECK / 2
    )
    async with ClusterEngine(impatient) as other:
        with pytest.raises(Problem, match="lease_timeout") as refused:
            await other.create_session()
        assert refused.value.http_status == 429
    freed = full.pop()
    await any_engine.remove_session(freed.id)
    late = await waiting  # the freed slot goes to the waiting session
    assert (await late.execute("echo drained")).stdout_text == "drained\n"
    for box in [*full, late]:
        await any_engine.remove_session(box.id)
    assert await any_engine.boxes() == []


async def test_a_box_hosts_port_answers_only_its_own_key(any_engine: ClusterEngine) -> None:
    async with any_engine.session() as box:
        node = any_engine.node_engine(box.id)
        async with httpx.AsyncClient(base_url=node.url) as stranger:
            for headers in ({}, {"Authorization": "Bearer golem_abc_def"}, {"X-Golem-Key": "x"}):
                listing = await stranger.get("/v1/sessions", headers=headers)
                assert listing.status_code == 401
                called = await stranger.post(
                    f"/v1/sessions/{box.id}/exec", json={"command": ["true"]}, headers=headers
                )
                assert called.status_code == 401
            # only the session routes are there: no key, run or admin API on a node
            key = await stranger.post("/v1/keys", json={"tenant": "t"}, headers=headers)
            assert key.status_code == 404


async def test_a_session_no_node_can_hold_fails_at_once_even_without_lease_timeout(
    ray_cluster: object, cluster_state: Path
) -> None:
    settings = cluster_settings(
        cluster_state / "control", cluster_state, slot_resource="golem_box_nowhere"
    )
    async with ClusterEngine(settings) as engine:
        with pytest.raises(NoNodeFits, match="golem_box_nowhere slots") as refused:
            await engine.create_session()
        assert refused.value.http_status == 503
        assert await engine.boxes() == []
        assert await engine.waiting() == []
