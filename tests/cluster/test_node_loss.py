"""A node that dies with a session on it: the session ends with NodeLost naming the node,
whoever registered ``on_session_end`` hears why, and when the node comes back (a new Ray
node under the same ``golem-node`` label) its box host prunes what the dead one left."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.cluster import ClusterEngine
from golem.cluster.boxhost import node_config
from golem.core import GolemConfig
from golem.core.errors import NodeLost
from golem.sandbox import LocalEngine
from tests.cluster.conftest import cluster_settings

pytestmark = pytest.mark.bwrap

VICTIM = "golem_box_victim"
"""The only resource the victim node has: sessions of this test's engine land there."""


def _victim(ray_cluster: Any) -> Any:
    node = ray_cluster.add_node(num_cpus=1, resources={VICTIM: 1}, labels={"golem-node": "victim"})
    ray_cluster.wait_for_nodes()
    return node


@pytest.fixture
def victim_config(ray_cluster: Any, cluster_state: Path) -> GolemConfig:
    return cluster_settings(cluster_state / "control", cluster_state, slot_resource=VICTIM)


async def test_a_session_on_a_node_that_dies_ends_naming_the_node_and_leaves_no_box(
    ray_cluster: Any, victim_config: GolemConfig
) -> None:
    node = _victim(ray_cluster)  # Ray starts nodes on the main thread only
    ended = asyncio.Event()
    heard: list[tuple[str, str]] = []

    def on_end(box_id: str, why: str) -> None:
        heard.append((box_id, why))
        ended.set()

    try:
        async with ClusterEngine(victim_config) as engine:
            engine.on_session_end(on_end)
            box = await engine.create_session()
            assert engine.node_of(box.id) == node.node_id
            await box.start("exec sleep 600")
            ray_cluster.remove_node(node)
            await ended.wait()
            assert heard == [(box.id, heard[0][1])]
            assert node.node_id in heard[0][1]
            assert box.closed
            with pytest.raises(NodeLost, match=node.node_id):
                await box.execute("true")
            with pytest.raises(NodeLost, match=node.node_id):
                await engine.get_session(box.id)
            assert await engine.boxes() == []
        on_disk = LocalEngine(node_config(victim_config, "victim"))
        left = [info.id for info in await on_disk.boxes()]
        assert left == [box.id]  # its record: the dead host could not clean up
        node = _victim(
            ray_cluster
        )  # Ray starts nodes on the main thread only  # the node comes back
        async with ClusterEngine(victim_config) as engine:
            again = await engine.create_session()
            assert engine.node_of(again.id) == node.node_id
            assert [info.id for info in await on_disk.boxes()] == [again.id]
    finally:
        if node in ray_cluster.worker_nodes:
            ray_cluster.remove_node(node)


async def test_a_worker_node_that_dies_takes_no_control_plane_with_it(
    ray_cluster: Any, cluster_state: Path
) -> None:
    """The engine's owner lives on the engine's own node: a worker that dies (whichever)
    ends no session and no run of other nodes, as its owner's death would."""
    import ray

    bystander = ray_cluster.add_node(num_cpus=1, labels={"golem-node": "bystander"})
    ray_cluster.wait_for_nodes()
    settings = cluster_settings(cluster_state / "control", cluster_state)
    try:
        async with ClusterEngine(settings) as engine, engine.session() as box:
            assert await engine.owner.node.remote() == ray.get_runtime_context().get_node_id()
            ray_cluster.remove_node(bystander)
            ran = await box.execute("echo alive")
            assert (ran.exit_code, ran.stdout) == (0, b"alive\n")
    finally:
        if bystander in ray_cluster.worker_nodes:
            ray_cluster.remove_node(bystander)
