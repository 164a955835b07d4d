"""`golem serve` with ``[cluster] ray_address``: the control plane's sessions are placed on
the Ray cluster's nodes, and the session parity scenarios pass through its API with
RemoteEngine exactly as against a single-machine server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.core import GolemConfig, load_config
from golem.sandbox import LocalEngine
from golem.service.client import RemoteEngine
from tests.cluster.conftest import on_nodes, server_toml
from tests.service.served import Served, serving
from tests.service.test_remote_engine import (  # noqa: F401  (collected here, through the server)
    test_a_background_process_is_read_signalled_and_reaped,
    test_a_failing_setup_is_seen_by_on_event_then_raised,
    test_a_one_shot_call_and_its_stream,
    test_a_pty_reports_its_size_and_exit,
    test_a_raw_pty_passes_bytes_that_are_not_utf8,
    test_a_removed_session_is_closed_for_every_handle,
    test_a_secret_is_masked_in_both,
    test_a_session_keeps_state_between_calls,
    test_an_interactive_call_takes_stdin_as_it_comes,
    test_files_and_directories_round_trip,
    test_output_that_is_not_utf8_comes_back_byte_for_byte,
    test_setup_events_reach_on_event_as_the_script_runs,
    test_streamed_events_arrive_in_order_with_the_exit_last,
)

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
    """The control plane's sessions through RemoteEngine (the name the parity tests take)."""
    async with RemoteEngine(served.url, served.key("parity"), config=config) as remote:
        yield remote


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
    """Today's shape (the runner on the control plane, its boxes on the nodes): a scripted
    run to its PR. Next: the runner itself on the node of its box."""
    from tests.blueprint.repos import make_remote
    from tests.service.test_api_runs import follow, submit

    remote = make_remote(reachable_dir)
    with served.client(served.key("runs", "trusted")) as client:
        submitted = submit(client, remote)
        assert submitted.status_code == 202, submitted.text
        events = follow(client, submitted.json()["id"])
        assert events[-1][0] == "run_end"
        assert events[-1][1]["status"] == "succeeded", events[-1]
        run = client.get(f"/v1/runs/{submitted.json()['id']}").json()
        assert run["pr"]["number"] == 1
