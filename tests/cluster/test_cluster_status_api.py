"""The cluster's status on a `golem serve` control plane: ``GET /v1/cluster`` (admin only)
with the sessions each node holds, the dashboard's cluster page, and a server on one
machine that says it has no cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from playwright.sync_api import Browser, Page, expect

from golem.cluster import ClusterEngine
from golem.cluster.boxhost import node_config
from golem.cluster.status import cluster_status
from golem.sandbox import LocalEngine
from golem.service.cluster import ClusterStatus
from tests.blueprint.repos import make_remote
from tests.cluster.cluster_runs import GATED, at_gate, node_of
from tests.cluster.conftest import NODE_NAMES, cluster_settings, server_toml
from tests.service.api_runs import follow, submit
from tests.service.dashboard_browser import browser, page, sign_in  # noqa: F401 - its fixtures
from tests.service.served import Served, serving

pytestmark = pytest.mark.bwrap

# The async tests come first: once the module's browser runs (Playwright's sync API keeps
# a loop of its own on this thread), no async test can start one.
SESSIONS = 3
"""More than a node's slots (2): the sessions are on two nodes at least."""


@pytest.fixture(scope="module")
def served(
    ray_cluster: Any,
    cluster_state: Path,
    cluster_database: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """A control plane on the session's Ray cluster, whose box hosts are its own: a box
    host runs its node's runs on the database of the control plane that started it, and
    each module has a database of its own (so the box hosts an earlier module started
    would look for this module's runs in theirs)."""
    from golem.cluster.nodes import stop_box_hosts

    stop_box_hosts("golem")
    config = server_toml(ray_cluster.address, cluster_state, cluster_database)
    with serving(tmp_path_factory.mktemp("control") / "state", config=config) as server:
        yield server


@pytest.fixture(scope="module")
def sessions(served: Served) -> Iterator[list[str]]:
    """``SESSIONS`` sessions open on the control plane for the module; their ids."""
    key = served.key("status")
    with served.client(key) as client:
        made = [client.post("/v1/sessions", json={"spec": {}}) for _ in range(SESSIONS)]
        assert all(m.status_code == 201 for m in made), [m.text for m in made]
        ids = [m.json()["id"] for m in made]
        yield ids
        for box_id in ids:
            client.delete(f"/v1/sessions/{box_id}")


async def on_each_node(node_state: Path) -> dict[str, list[str]]:
    """The boxes on each node's disk (its box host's records), by node name."""
    found = {}
    for name in NODE_NAMES:
        settings = node_config(cluster_settings(node_state, node_state), name)
        found[name] = sorted(info.id for info in await LocalEngine(settings).boxes())
    return found


async def test_the_api_shows_each_nodes_sessions_as_the_nodes_hold_them(
    served: Served, sessions: list[str], cluster_state: Path
) -> None:
    with served.admin() as admin:
        answer = admin.get("/v1/cluster")
    assert answer.status_code == 200, answer.text
    nodes = {n.name: n for n in ClusterStatus.model_validate(answer.json()).nodes if n.alive}
    assert sorted(nodes) == NODE_NAMES
    on_disk = await on_each_node(cluster_state)
    assert {name: nodes[name].sessions for name in NODE_NAMES} == on_disk
    assert sorted(box for boxes in on_disk.values() for box in boxes) == sorted(sessions)
    assert len([name for name in NODE_NAMES if on_disk[name]]) >= 2
    assert {name: nodes[name].taken for name in NODE_NAMES} == {
        name: len(boxes) for name, boxes in on_disk.items()
    }
    assert all(nodes[name].runs == [] for name in NODE_NAMES)


async def test_a_box_host_that_does_not_answer_in_time_is_unknown_not_an_error(
    ray_cluster: Any, cluster_state: Path
) -> None:
    settings = cluster_settings(cluster_state / "control", cluster_state)
    async with ClusterEngine(settings) as engine, engine.session() as box:
        answered = await cluster_status("golem_box", "golem")
        silent = await cluster_status("golem_box", "golem", held_timeout=0)
        holder_id = engine.node_of(box.id)
    holder = next(n for n in answered.nodes if n.node_id == holder_id)
    assert holder.sessions is not None
    assert box.id in holder.sessions
    hosted = [n for n in silent.nodes if n.box_host]
    assert hosted
    assert all(n.sessions is None and n.runs is None for n in hosted)
    assert [n.taken for n in silent.nodes] == [n.taken for n in answered.nodes]


def test_the_api_shows_a_run_on_the_node_that_runs_it(
    served: Served, reachable_dir: Path, tmp_path: Path
) -> None:
    blueprint = tmp_path / "gated.yaml"
    blueprint.write_text(GATED)
    remote = make_remote(reachable_dir, "status")
    with served.client(served.key("runner", "trusted")) as client:
        run_id = submit(client, remote, blueprint=str(blueprint)).json()["id"]
        follow(client, run_id, until=at_gate)  # its runner waits on its node
        run = client.get(f"/v1/runs/{run_id}").json()
        assert run["status"] == "waiting", run
        with served.admin() as admin:
            nodes = ClusterStatus.model_validate(admin.get("/v1/cluster").json()).nodes
        answered = client.post(f"/v1/runs/{run_id}/gate", json={"decision": "rejected"})
        assert answered.status_code == 200, answered.text
        follow(client, run_id)
    assert [n.name for n in nodes if n.runs and run_id in n.runs] == [node_of(run)]


def test_only_an_admin_key_sees_the_cluster(served: Served) -> None:
    with served.client(served.key("curious", "trusted")) as client:
        refused = client.get("/v1/cluster")
    assert refused.status_code == 403
    assert "admin" in refused.json()["detail"]


def test_a_server_on_one_machine_says_it_has_no_cluster(
    tmp_path: Path,
    browser: Browser,  # noqa: F811 - fixtures, imported above
) -> None:
    with serving(tmp_path / "state") as alone, alone.admin() as admin:
        answer = admin.get("/v1/cluster")
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/problem+json"
        assert "ray_address" in answer.json()["detail"]
        tab = browser.new_page()
        sign_in(tab, alone, alone.admin_key)
        expect(tab.locator("#nav")).to_have_attribute("data-cluster", "no")
        expect(tab.locator("#nav a[data-view='cluster']")).to_be_hidden()
        tab.close()


def test_the_dashboard_shows_an_admin_the_nodes_and_their_sessions(
    served: Served,
    sessions: list[str],
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    sign_in(page, served, served.admin_key)
    page.locator("#nav a[data-view='cluster']").click()
    nodes = page.get_by_test_id("cluster")
    for name in NODE_NAMES:
        expect(nodes.locator(f"tr[data-node-name='{name}']")).to_be_visible()
    for box_id in sessions:
        expect(nodes).to_contain_text(box_id)


def test_the_dashboard_has_no_cluster_link_for_a_user(
    served: Served,
    page: Page,  # noqa: F811 - fixtures, imported above
) -> None:
    sign_in(page, served, served.key("viewer"))
    expect(page.locator("#nav")).to_have_attribute("data-cluster", "no")
    expect(page.locator("#nav a[data-view='cluster']")).to_be_hidden()
