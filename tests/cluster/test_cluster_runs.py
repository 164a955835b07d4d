"""Runs on a Ray cluster through a `golem serve` control plane (PostgreSQL store): each
run's runner executes on the node that holds its box; thirty runs spread over the three
nodes all reach their pull request; a full cluster holds claimed runs in Ray's queue and
drains as slots free; a node that dies mid-run has its run resumed on another node from
its last checkpoint, with one commit and one pull request, and leaves no box."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.cluster import ClusterEngine
from golem.cluster.boxhost import node_config
from golem.sandbox import LocalEngine
from tests.blueprint.repos import branch_commits, make_remote
from tests.cluster.cluster_runs import GATED, at_gate, node_of
from tests.cluster.conftest import NODE_NAMES, NODES, SLOTS, cluster_settings, server_toml
from tests.service.api_runs import follow, submit
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

RUNS = 30


def at_gate_again(event: tuple[str, dict[str, Any]]) -> bool:
    """A resumed run waits again at the gate it waited at (its deadline kept): answerable."""
    return event[0] == "gate_wait" and event[1]["node"] == "approve"


def waits_for_a_slot(event: tuple[str, dict[str, Any]]) -> bool:
    return event[0] == "note" and "waits for a free box slot" in event[1]["message"]


def approve(client: httpx.Client, run_id: str) -> None:
    answered = client.post(f"/v1/runs/{run_id}/gate", json={"decision": "approved"})
    assert answered.status_code == 200, answered.text


@pytest.fixture(scope="module")
def control(
    ray_cluster: Any,
    cluster_state: Path,
    cluster_database: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """A control plane with more runners than the cluster has slots (runs wait in Ray)."""
    config = server_toml(ray_cluster.address, cluster_state, cluster_database)
    config += f'[server]\nmax_runs = {NODES * SLOTS + 2}\noverflow = "queue"\n'
    with serving(tmp_path_factory.mktemp("control") / "state", config=config) as server:
        yield server


@pytest.fixture
def gated(tmp_path: Path) -> str:
    path = tmp_path / "gated.yaml"
    path.write_text(GATED)
    return str(path)


@pytest.mark.timeout(900)  # thirty whole runs on a 2-core machine
def test_thirty_runs_spread_over_the_nodes_all_reach_their_pull_request(
    control: Served, reachable_dir: Path
) -> None:
    remote = make_remote(reachable_dir, "thirty")
    with control.client(control.key("thirty", "trusted")) as client:
        submitted = [submit(client, remote) for _ in range(RUNS)]
        refused = [s.text for s in submitted if s.status_code != 202]
        assert refused == []
        ids = [s.json()["id"] for s in submitted]
        ends = [follow(client, run_id)[-1] for run_id in ids]
        assert [end[1]["status"] for end in ends] == ["succeeded"] * RUNS, ends
        runs = [client.get(f"/v1/runs/{run_id}").json() for run_id in ids]
    assert {node_of(run) for run in runs} == set(NODE_NAMES)  # Ray spread them
    assert sorted(run["pr"]["number"] for run in runs) == list(range(1, RUNS + 1))
    for run in runs:
        assert len(branch_commits(remote, run["branch"])) == 1


@pytest.mark.timeout(600)
def test_a_full_cluster_holds_claimed_runs_in_its_queue_then_drains(
    control: Served, reachable_dir: Path, gated: str
) -> None:
    from ray.util.placement_group import placement_group_table

    remote = make_remote(reachable_dir, "full")
    slots = NODES * SLOTS
    with control.client(control.key("full", "trusted")) as client:
        holding = [submit(client, remote, blueprint=gated).json()["id"] for _ in range(slots)]
        for run_id in holding:  # every slot is held by a run waiting at its gate
            follow(client, run_id, until=at_gate)
        waiting = submit(client, remote, blueprint=gated).json()["id"]
        follow(client, waiting, until=waits_for_a_slot)  # claimed, held in Ray's queue
        groups = placement_group_table().values()
        assert sum(1 for group in groups if group["state"] == "PENDING") == 1
        assert client.get(f"/v1/runs/{waiting}").json()["steps"] == []
        approve(client, holding[0])  # its run ships and frees its slot
        assert follow(client, holding[0])[-1][1]["status"] == "unverified"
        follow(client, waiting, until=at_gate)  # the waiting run got the freed slot
        for run_id in [*holding[1:], waiting]:
            approve(client, run_id)
            assert follow(client, run_id)[-1][1]["status"] == "unverified"


LATER = "golem_box_later"
"""Slots no node has when the run is claimed."""


@pytest.mark.timeout(600)
def test_a_run_no_node_can_hold_yet_waits_for_one_to_join(
    ray_cluster: Any, cluster_state: Path, postgres_url: str, reachable_dir: Path, tmp_path: Path
) -> None:
    """A claimed run waits (a session would fail at once): a node may come back, or an
    autoscaler add one."""
    remote = make_remote(reachable_dir, "later")
    config = server_toml(ray_cluster.address, cluster_state, postgres_url)
    config = config.replace("[cluster]\n", f'[cluster]\nslot_resource = "{LATER}"\n')
    node = None
    try:
        with (
            serving(tmp_path / "state", config=config) as server,
            server.client(server.key("later", "trusted")) as client,
        ):
            run_id = submit(client, remote).json()["id"]
            follow(client, run_id, until=waits_for_a_slot)
            node = ray_cluster.add_node(num_cpus=1, resources={LATER: 1},
                                        labels={"golem-node": "joiner"})  # fmt: skip
            end = follow(client, run_id)[-1]
            assert end[1]["status"] == "succeeded", end
            assert node_of(client.get(f"/v1/runs/{run_id}").json()) == "joiner"
    finally:
        if node is not None:
            ray_cluster.remove_node(node)


RESOURCE = "golem_box_resume"
"""The only slots this test's control plane asks for: the victim's, then the rescuer's."""


@pytest.mark.timeout(600)
def test_a_run_whose_node_dies_resumes_on_another_node_with_one_commit_and_one_pr(
    ray_cluster: Any,
    cluster_state: Path,
    postgres_url: str,
    reachable_dir: Path,
    tmp_path: Path,
    gated: str,
) -> None:
    remote = make_remote(reachable_dir, "resume")
    victim = ray_cluster.add_node(num_cpus=1, resources={RESOURCE: 1},
                                  labels={"golem-node": "victim"})  # fmt: skip
    rescuer = None
    config = server_toml(ray_cluster.address, cluster_state, postgres_url)  # its own queue
    config = config.replace("[cluster]\n", f'[cluster]\nslot_resource = "{RESOURCE}"\n')
    try:
        with (
            serving(tmp_path / "state", config=config) as server,
            server.client(server.key("resume", "trusted")) as client,
        ):
            run_id = submit(client, remote, blueprint=gated).json()["id"]
            seen = follow(client, run_id, until=at_gate)
            assert node_of(client.get(f"/v1/runs/{run_id}").json()) == "victim"
            rescuer = ray_cluster.add_node(num_cpus=1, resources={RESOURCE: 1},
                                           labels={"golem-node": "rescuer"})  # fmt: skip
            ray_cluster.remove_node(victim)  # the machine goes, mid-run
            again = follow(client, run_id, until=at_gate_again, after=len(seen))
            notes = [e[1]["message"] for e in again if e[0] == "note"]
            assert any(victim.node_id in note and "queued again" in note for note in notes)
            said = [(e[0], e[1].get("message") or e[1].get("summary")) for e in again]
            why = (said, client.get(f"/v1/runs/{run_id}").json(), "".join(server.output[-60:]))
            assert any("made again on this machine" in note for note in notes), why
            resumed = client.get(f"/v1/runs/{run_id}").json()
            assert node_of(resumed) == "rescuer"
            assert [s["node"] for s in resumed["steps"]] == ["prepare", "implement"]
            approve(client, run_id)
            end = follow(client, run_id)[-1]
            assert end[1]["status"] == "unverified", end
            done = client.get(f"/v1/runs/{run_id}").json()
        assert [s["node"] for s in done["steps"]].count("implement") == 1
        [commit] = branch_commits(remote, done["branch"])
        assert run_id in commit
        assert done["pr"]["number"] == 1
    finally:
        for node in (victim, rescuer):
            if node is not None and node in ray_cluster.worker_nodes:
                ray_cluster.remove_node(node)
    _victims_boxes_go_when_it_returns(ray_cluster, cluster_state)


def _victims_boxes_go_when_it_returns(ray_cluster: Any, cluster_state: Path) -> None:
    """The victim's box host died with the run's box on its disk; the node back under the
    same name prunes it as its box host starts."""
    import asyncio

    settings = cluster_settings(cluster_state / "back", cluster_state, slot_resource=RESOURCE)
    on_disk = LocalEngine(node_config(settings, "victim"))
    assert len(asyncio.run(on_disk.boxes())) == 1  # the run's box, left by the dead host
    node = ray_cluster.add_node(num_cpus=1, resources={RESOURCE: 1},
                                labels={"golem-node": "victim"})  # fmt: skip
    try:

        async def session_there() -> list[str]:
            async with ClusterEngine(settings) as engine, engine.session() as box:
                return [box.id, *(info.id for info in await on_disk.boxes())]

        made, *left = asyncio.run(session_there())
        assert left == [made]  # only the new session's box: the old one was pruned
    finally:
        ray_cluster.remove_node(node)


@pytest.mark.timeout(600)
def test_a_run_whose_control_plane_dies_is_stopped_on_its_node_and_resumed_by_the_next(
    ray_cluster: Any,
    cluster_state: Path,
    postgres_url: str,
    reachable_dir: Path,
    tmp_path: Path,
    gated: str,
) -> None:
    from tests.cluster.conftest import on_nodes

    remote = make_remote(reachable_dir, "restart")
    config = server_toml(ray_cluster.address, cluster_state, postgres_url)  # its own queue
    with serving(tmp_path / "state", config=config) as doomed:
        key = doomed.key("restart", "trusted")
        with doomed.client(key) as client:
            run_id = submit(client, remote, blueprint=gated).json()["id"]
            seen = follow(client, run_id, until=at_gate)
        doomed.kill()  # SIGKILL: its Ray driver goes, and its Owner actor with it
    with serving(tmp_path / "state", config=config) as again, again.client(key) as client:
        follow(client, run_id, until=at_gate_again, after=len(seen))  # recovered, resumed
        approve(client, run_id)
        end = follow(client, run_id)[-1]
        assert end[1]["status"] == "unverified", end
        done = client.get(f"/v1/runs/{run_id}").json()
    assert [s["node"] for s in done["steps"]].count("implement") == 1
    assert len(branch_commits(remote, done["branch"])) == 1
    assert done["pr"]["number"] == 1
    import asyncio

    assert asyncio.run(on_nodes(cluster_state)) == []  # the stopped runner removed its box
