"""`golem serve` with ``[cluster] ray_address``: the control plane's sessions are placed on
the Ray cluster's nodes, and the engine contract (tests/sandbox/engine_contract.py) holds
through its API with RemoteEngine exactly as against a single-machine server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.core import GolemConfig, load_config
from golem.sandbox import LocalEngine, RemoteEngine
from tests.cluster.conftest import on_nodes, server_toml
from tests.sandbox.engine_contract import Scenario, contract
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def served(
    ray_cluster: Any,
    cluster_state: Path,
    cluster_database: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """A control plane on the session's Ray cluster."""
    config = server_toml(ray_cluster.address, cluster_state, cluster_database)
    with serving(tmp_path_factory.mktemp("control") / "state", config=config) as server:
        yield server


@pytest.fixture
async def any_engine(served: Served, config: GolemConfig) -> AsyncIterator[RemoteEngine]:
    """The control plane's sessions through RemoteEngine (the engine the contract runs on)."""
    async with RemoteEngine(served.url, served.key("parity"), config=config) as remote:
        yield remote


@contract
async def test_each_engine_keeps_the_engine_contract(
    any_engine: RemoteEngine, scenario: Scenario, tmp_path: Path
) -> None:
    await scenario(any_engine, tmp_path)


async def test_the_control_plane_boxes_are_on_the_nodes_not_its_own_machine(
    served: Served, cluster_state: Path
) -> None:
    local = LocalEngine(load_config({"state_dir": str(served.state_dir)}, files=[]))
    async with RemoteEngine(served.url, served.key("where")) as remote, remote.session() as box:
        assert await local.boxes() == []  # nothing on the control plane's engine
        assert await on_nodes(cluster_state) == [box.id]


async def test_a_control_plane_killed_leaves_no_box_on_the_nodes(
    ray_cluster: Any, cluster_state: Path, cluster_database: str, tmp_path: Path
) -> None:
    import ray

    from golem.cluster.nodes import BOX_HOST_PREFIX

    config = server_toml(ray_cluster.address, cluster_state, cluster_database)
    with serving(tmp_path / "state", config=config) as doomed:
        with doomed.client(doomed.key("doomed")) as client:
            made = client.post("/v1/sessions", json={"spec": {}})
        assert made.status_code == 201, made.text
        box_id = made.json()["id"]
        assert box_id in await on_nodes(cluster_state)
        doomed.kill()  # SIGKILL: no shutdown, its Ray driver just goes
    hosts = [
        ray.get_actor(named["name"], namespace="golem")
        for named in ray.util.list_named_actors(all_namespaces=True)
        if named["name"].startswith(BOX_HOST_PREFIX)
    ]
    # its leases die with their owner; each box host ends the sessions they held
    await asyncio.gather(*(host.ended.remote(box_id) for host in hosts))
    assert box_id not in await on_nodes(cluster_state)


def test_a_run_on_a_cluster_control_plane_reaches_its_pull_request(
    served: Served, reachable_dir: Path
) -> None:
    """A scripted run to its PR, its runner on a node. The box hosts were started by the
    control planes of earlier modules, with their own databases: a node writes each run to
    its own control plane's store."""
    from tests.blueprint.repos import make_remote
    from tests.service.api_runs import follow, submit

    remote = make_remote(reachable_dir)
    with served.client(served.key("runs", "trusted")) as client:
        submitted = submit(client, remote)
        assert submitted.status_code == 202, submitted.text
        events = follow(client, submitted.json()["id"])
        assert events[-1][0] == "run_end"
        assert events[-1][1]["status"] == "succeeded", events[-1]
        run = client.get(f"/v1/runs/{submitted.json()['id']}").json()
        assert run["pr"]["number"] == 1
