"""A real multi-node Ray cluster on this machine (Ray's ``cluster_utils``: a head and two
workers, each its own raylet, each advertising box slots), for the whole session, shut
down after it. Skipped where Ray is not installed (extra ``golem[ray]``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

SLOTS = 2
"""Box slots of each node (``golem_box``): three nodes, six sessions at once."""
NODES = 3
NODE_NAMES = [f"node-{number}" for number in range(NODES)]
"""Their ``golem-node`` labels (so each its own state directory)."""


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """Three raylets on this machine, one CPU and ``SLOTS`` box slots each; this test
    process is the Ray driver (the control plane)."""
    cluster = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {"golem_box": SLOTS},
            "labels": {"golem-node": NODE_NAMES[0]},
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
            from golem.cluster.engine import stop_box_hosts

            stop_box_hosts("golem")
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="session")
def cluster_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state directory the box hosts of the session's cluster share (each its own
    ``cluster/<node>`` under it)."""
    return tmp_path_factory.mktemp("cluster") / "state"
