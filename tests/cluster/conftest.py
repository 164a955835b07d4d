"""A real multi-node Ray cluster on this machine (Ray's ``cluster_utils``: a head and two
workers, each its own raylet, each advertising box slots), for the whole session, shut
down after it. Each test module skips where Ray is not installed (extra ``golem[ray]``):
a conftest may not skip, so Ray is imported here only inside the fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem.core import GolemConfig, load_config
from golem.sandbox import LocalEngine

SLOTS = 2
"""Box slots of each node (``golem_box``): three nodes, six sessions at once."""
NODES = 3
NODE_NAMES = [f"node-{number}" for number in range(NODES)]
"""Their ``golem-node`` labels (so each its own state directory)."""


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    """Under CI (``CI`` set) a module of this directory skipped for want of Ray fails:
    CI installs ``golem[ray]`` (scripts/setup), so it may never pass by skipping these."""
    report = yield
    if report.skipped and os.environ.get("CI"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {report.longrepr}"
    return report


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """Three raylets on this machine, one CPU and ``SLOTS`` box slots each; this test
    process is the Ray driver (the control plane)."""
    import ray
    from ray import cluster_utils

    cluster = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {"golem_box": SLOTS},
            "labels": {"golem-node": NODE_NAMES[0]},
            # No dashboard, and no fixed port for it: a port test of Ray's leaks its socket
            # when 8265 is taken (another cluster on this machine), and pytest fails on it.
            "include_dashboard": False,
            "dashboard_port": None,
        },
    )
    try:
        for number in range(1, NODES):
            cluster.add_node(
                num_cpus=1,
                resources={"golem_box": SLOTS},
                labels={"golem-node": NODE_NAMES[number]},
            )
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="golem-test", log_to_driver=False)
        yield cluster
    finally:
        if ray.is_initialized():
            from golem.cluster.nodes import stop_box_hosts

            stop_box_hosts("golem")
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="session")
def cluster_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state directory the box hosts of the session's cluster share (each its own
    ``cluster/<node>`` under it)."""
    return tmp_path_factory.mktemp("cluster") / "state"


NO_POOL = {"pool": {"clean": 0}}
"""No warm pool on the nodes: an ended session's box is stopped and its record goes, so
the boxes on a node's disk are exactly its sessions' (a pool keeps wiped boxes)."""


def cluster_settings(
    state: Path, node_state: Path, address: str = "auto", **cluster: object
) -> GolemConfig:
    """A control plane's configuration on the test cluster: its own state, the box hosts'
    under ``node_state`` (every node the same, whoever starts its box host)."""
    settings = {"ray_address": address, "node_state_dir": str(node_state), **cluster}
    return load_config({"state_dir": str(state), "cluster": settings, "engine": NO_POOL}, files=[])


def server_toml(address: str, node_state: Path, database: str) -> str:
    """The golem.toml of a `golem serve` control plane on the test cluster (its store:
    ``database``, a PostgreSQL URL every node reaches)."""
    return (
        f'database_url = "{database}"\n'
        f'[cluster]\nray_address = "{address}"\nnode_state_dir = "{node_state}"\n'
        "[engine.pool]\nclean = 0\n"
    )


@pytest.fixture(scope="module")
def cluster_database() -> Iterator[str]:
    """A PostgreSQL database for a module's control planes (dropped after it): control
    planes on one database share its queue, so each module has its own."""
    from tests.conftest import new_postgres_database

    with new_postgres_database() as url:
        yield url


async def on_nodes(node_state: Path) -> list[str]:
    """The boxes on the nodes' disks (their records in each box host's state)."""
    from golem.cluster.boxhost import node_config

    found: list[str] = []
    for name in NODE_NAMES:
        settings = node_config(cluster_settings(node_state, node_state), name)
        found += [info.id for info in await LocalEngine(settings).boxes()]
    return found


TIER = "gvisor"
TIER_NODE = "node-gvisor"
TIER_BACKEND: dict[str, str] = {"type": "gvisor"}
"""The backend serving the ``TIER`` tier on the test nodes (the tier node's
``golem-backend`` label is its type)."""
MICROVM_BACKEND: dict[str, str] = {"type": "microvm"}
"""The microvm tier's backend on the test control planes. No node holds that tier, so no
microVM ever starts here: the tests only see a box of it refused for want of a node (a
label-only check; the microvm backend's boxes are tested in tests/sandbox and
tests/service)."""
TIER_BACKENDS: dict[str, dict[str, str]] = {TIER: TIER_BACKEND, "microvm": MICROVM_BACKEND}
"""The tiers the test control planes serve besides the default, and their backends."""
DOCKER_NODE = "node-docker"
TIER_IMAGE = "golem/gvisor-devbox:1"
"""An image only the tier's node says it has (a gVisor box's image is a root file
system directory: the tests ask for it only to place a slot, never to start a box)."""


def tiers_toml() -> str:
    """golem.toml's tables of the tiers a test control plane serves (``TIER_BACKENDS``)."""
    return "".join(
        f"[engine.tiers.{tier}]\n"
        + "".join(f'{key} = "{value}"\n' for key, value in backend.items())
        for tier, backend in TIER_BACKENDS.items()
    )


@pytest.fixture(scope="module")
def labelled_nodes(ray_cluster: Any) -> Iterator[dict[str, str]]:
    """Two more nodes on the session's cluster for one module, removed after it: one of
    trust tier ``TIER`` (one box slot, and ``TIER_IMAGE``), one labelled as a Docker node
    (one slot). Their names -> Ray node ids."""
    from golem.cluster.placement import node_labels

    labels = {
        TIER_NODE: node_labels(backend=TIER_BACKEND["type"], tier=TIER, images=[TIER_IMAGE]),
        DOCKER_NODE: node_labels(backend="docker"),
    }
    added = {
        name: ray_cluster.add_node(
            num_cpus=1, resources={"golem_box": 1}, labels={**wanted, "golem-node": name}
        )
        for name, wanted in labels.items()
    }
    try:
        ray_cluster.wait_for_nodes()
        yield {name: node.node_id for name, node in added.items()}
    finally:
        for node in added.values():
            ray_cluster.remove_node(node)
