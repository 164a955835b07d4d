"""`golem cluster status`: the nodes as Ray knows them, their box slots and how many
sessions hold one, and whether golem's box host runs there."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.cluster import ClusterEngine
from golem.cluster.status import NodeStatus
from tests.cluster.conftest import NODE_NAMES, SLOTS, cluster_settings, server_toml

pytestmark = pytest.mark.bwrap


async def test_the_status_shows_each_nodes_slots_and_the_one_a_session_holds(
    ray_cluster: Any, cluster_state: Path, cluster_database: str, tmp_path: Path
) -> None:
    settings = cluster_settings(cluster_state / "control", cluster_state)
    config_file = tmp_path / "golem.toml"
    config_file.write_text(server_toml(ray_cluster.address, cluster_state, cluster_database))
    async with ClusterEngine(settings) as engine, engine.session() as box:
        holder = engine.node_of(box.id)
        command = [sys.executable, "-m", "golem", "cluster", "status", "--json"]
        shown = await asyncio.to_thread(
            subprocess.run,
            [*command, "--config", str(config_file)],
            capture_output=True,
            timeout=120,
            check=True,
        )
    nodes = [NodeStatus.model_validate(json.loads(line)) for line in shown.stdout.splitlines()]
    ours = {node.name: node for node in nodes if node.alive and node.name in NODE_NAMES}
    assert sorted(ours) == NODE_NAMES
    assert {node.slots for node in ours.values()} == {SLOTS}
    assert [(n.node_id, n.taken) for n in ours.values() if n.taken] == [(holder, 1)]
    assert next(n for n in ours.values() if n.node_id == holder).box_host
