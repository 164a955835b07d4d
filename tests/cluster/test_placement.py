"""Placement by what a node is (Ray node labels): the isolation tier a box needs (a role's
``min_tier``, which the trust policy gives its boxes and runs: one setting with the
``golem-tier`` label), the backend serving it, the image a box names; a box no node can
run fails at once, a node that cannot run what its labels claim refuses to host boxes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from pydantic import TypeAdapter
from ray.util.placement_group import PlacementGroup, remove_placement_group

from golem.cluster import ClusterEngine
from golem.cluster.placement import image_label
from golem.core import BackendConfig, GolemConfig, load_config
from golem.core.errors import BackendUnavailable, NodeLost, NoNodeFits
from golem.core.isolation import IsolationTier
from golem.service.keys import Principal
from golem.service.sessions import SessionRegistry
from tests.cluster.conftest import (
    DOCKER_NODE,
    NODES,
    SLOTS,
    TIER,
    TIER_BACKENDS,
    TIER_IMAGE,
    TIER_NODE,
    cluster_settings,
)

pytestmark = [
    pytest.mark.bwrap,
    # Ray's cluster utilities leave a socket of the head node to the garbage collector,
    # which may collect it during any test of a module that allocates (traced to
    # ray.cluster_utils.Cluster's add_node)
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

UNTRUSTED = Principal(tenant="stranger", role="user", key_id="k-user")
TRUSTED = Principal(tenant="team", role="trusted", key_id="k-trusted")


def tiered(config: GolemConfig, role: str = "user") -> GolemConfig:
    """``config`` serving ``TIER_BACKENDS``, with ``role``'s minimum tier ``TIER``."""
    policies = dict(config.server.policies)
    policies[role] = policies[role].model_copy(update={"min_tier": TIER})
    server = config.server.model_copy(update={"policies": policies})
    backends = TypeAdapter[dict[IsolationTier, BackendConfig]](dict[IsolationTier, BackendConfig])
    engine = config.engine.model_copy(update={"tiers": backends.validate_python(TIER_BACKENDS)})
    return config.model_copy(update={"server": server, "engine": engine})


@pytest.fixture
def config(labelled_nodes: dict[str, str], cluster_state: Path) -> GolemConfig:
    return tiered(cluster_settings(cluster_state / "control", cluster_state))


@pytest.fixture
async def engine(config: GolemConfig) -> AsyncIterator[ClusterEngine]:
    async with ClusterEngine(config) as engine:
        yield engine


async def test_a_tiers_role_gets_boxes_only_on_its_tiers_nodes_and_waits_when_they_are_full(
    engine: ClusterEngine, config: GolemConfig, labelled_nodes: dict[str, str]
) -> None:
    registry = SessionRegistry(config, engine)
    try:
        first = await registry.open(UNTRUSTED, {})
        assert engine.node_of(first.box.id) == labelled_nodes[TIER_NODE]
        assert first.box.isolation is not None
        assert (first.box.isolation.tier, first.box.isolation.backend) == (TIER, "gvisor")
        kernel = await first.box.execute("uname -r")
        assert kernel.stdout_text.strip() not in ("", os.uname().release)  # gVisor's kernel
        # the tier's one slot is taken; six slots are free elsewhere, and stay unused
        second = asyncio.ensure_future(registry.open(UNTRUSTED, {}))
        assert await engine.waiting(at_least=1) == ["NO_RESOURCES"]
        assert not second.done()
        await registry.close(UNTRUSTED, first.box.id)
        late = await second
        assert engine.node_of(late.box.id) == labelled_nodes[TIER_NODE]
    finally:
        await registry.close_all()


async def test_a_default_tier_box_never_gets_a_tiers_node_even_with_its_slot_free(
    engine: ClusterEngine, config: GolemConfig, labelled_nodes: dict[str, str]
) -> None:
    shared = [await engine.lease() for _ in range(NODES * SLOTS)]  # every shared slot
    try:
        held = {node.node_id for _, node in shared}
        assert not held & {labelled_nodes[TIER_NODE], labelled_nodes[DOCKER_NODE]}
        registry = SessionRegistry(config, engine)
        opening = asyncio.ensure_future(registry.open(TRUSTED, {}))
        assert await engine.waiting(at_least=1) == ["NO_RESOURCES"]
        slot, node = shared.pop()
        remove_placement_group(slot)
        opened = await opening
        assert engine.node_of(opened.box.id) == node.node_id
        await registry.close_all()
    finally:
        for slot, _ in shared:
            remove_placement_group(slot)


async def test_a_box_no_node_can_run_fails_at_once_naming_what_it_needs(
    engine: ClusterEngine, labelled_nodes: dict[str, str]
) -> None:
    with pytest.raises(NoNodeFits, match=image_label("nobody/has-this:1")):
        await engine.lease(engine.spec(image="nobody/has-this:1"))
    # only the tier's node has TIER_IMAGE: a box of the default tier cannot have it
    with pytest.raises(NoNodeFits, match="golem-tier"):
        await engine.lease(engine.spec(image=TIER_IMAGE))
    # served (by the microvm backend), but held by no node: its slot asks for both labels
    with pytest.raises(NoNodeFits, match="golem-backend=microvm, golem-tier=microvm"):
        await engine.lease(engine.spec(tier="microvm"))
    placed: PlacementGroup
    placed, node = await engine.lease(engine.spec(image=TIER_IMAGE, tier=TIER))
    remove_placement_group(placed)
    assert node.node_id == labelled_nodes[TIER_NODE]
    assert await engine.waiting() == []


async def test_a_docker_control_plane_gets_only_docker_nodes_whose_host_checks_docker(
    labelled_nodes: dict[str, str], cluster_state: Path, tmp_path: Path
) -> None:
    backend = {"type": "docker", "docker_host": f"unix://{tmp_path}/no-docker.sock"}
    docker = tiered(
        load_config(
            {
                "state_dir": str(tmp_path / "control"),
                "cluster": {"ray_address": "auto", "node_state_dir": str(cluster_state)},
                "engine": {"backend": backend, "pool": {"clean": 0}},
            },
            files=[],
        )
    )
    async with ClusterEngine(docker) as engine:
        with pytest.raises((BackendUnavailable, NodeLost)) as refused:
            await engine.lease()
    message = str(refused.value)
    assert labelled_nodes[DOCKER_NODE] in message
    assert "container engine" in message  # the box host checked the node's Docker


def test_a_tiers_run_runs_on_its_tiers_node_only(
    labelled_nodes: dict[str, str],
    ray_cluster: Any,
    cluster_state: Path,
    postgres_url: str,
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    """A run is placed like a session of the role that submitted it: the tier travels with
    the run (its state), and its runner and boxes are on the tier's node."""
    from tests.blueprint.repos import make_remote
    from tests.cluster.cluster_runs import node_of
    from tests.cluster.conftest import server_toml, tiers_toml
    from tests.service.api_runs import follow, submit
    from tests.service.served import serving

    config = server_toml(ray_cluster.address, cluster_state, postgres_url)
    config += tiers_toml() + (
        f'[server.policies.trusted]\nserver_files = true\nmin_tier = "{TIER}"\n'
        'repos = {schemes = ["file"]}\n'
    )
    remote = make_remote(reachable_dir, "tiered")
    with (
        serving(tmp_path / "state", config=config) as server,
        server.client(server.key("stranger", "trusted")) as client,
    ):
        submitted = submit(client, remote)
        assert submitted.status_code == 202, submitted.text
        assert submitted.json()["tier"] == TIER
        end = follow(client, submitted.json()["id"])[-1]
        assert end[1]["status"] == "succeeded", end
        run = client.get(f"/v1/runs/{submitted.json()['id']}").json()
    assert node_of(run) == TIER_NODE
