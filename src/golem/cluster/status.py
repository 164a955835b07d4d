"""What the cluster holds, as Ray knows it: its nodes, their box slots and how many are
taken, whether golem's box host runs there, and the sessions and runs each box host holds
(``golem cluster status``, ``GET /v1/cluster``, the dashboard's cluster page)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayError
from ray.util.placement_group import placement_group_table

from golem.cluster.boxhost import NODE_LABEL
from golem.cluster.nodes import BOX_HOST_PREFIX
from golem.service import ClusterStatus, NodeStatus

__all__ = ["HELD_TIMEOUT", "NodeStatus", "cluster_status"]

HELD_TIMEOUT = 5.0
"""Seconds a box host has to say what it holds; one that does not is shown as unknown."""


@dataclass
class _Snapshot:
    """Ray's view, read in one go (blocking GCS calls, so off the event loop)."""

    nodes: list[dict[str, Any]]
    taken: Counter[str]
    hosts: dict[str, Any]  # node id -> its box host's handle


def _snapshot(slot_resource: str, namespace: str) -> _Snapshot:
    """Ray's nodes, the slots its placement groups hold on each, and the box hosts."""
    taken: Counter[str] = Counter()
    for group in placement_group_table().values():
        if group.get("state") != "CREATED":
            continue
        for index, bundle in group.get("bundles", {}).items():
            if slot_resource in bundle:
                taken[group["bundles_to_node_id"][index]] += int(bundle[slot_resource])
    nodes = ray.nodes()  # type: ignore[no-untyped-call,unused-ignore]
    return _Snapshot(nodes=nodes, taken=taken, hosts=_box_hosts(namespace))


def _box_hosts(namespace: str) -> dict[str, Any]:
    """The box hosts of ``namespace`` by node id (one gone since it was listed: left out)."""
    hosts = {}
    for named in ray.util.list_named_actors(all_namespaces=True):
        if named["namespace"] != namespace or not named["name"].startswith(BOX_HOST_PREFIX):
            continue
        try:
            handle = ray.get_actor(named["name"], namespace)
        except ValueError:  # it died in between
            continue
        hosts[named["name"].removeprefix(BOX_HOST_PREFIX)] = handle
    return hosts


async def _held(host: Any, timeout: float) -> dict[str, list[str]] | None:
    """What a box host holds, or None when it does not say within ``timeout``."""
    try:
        async with asyncio.timeout(timeout):
            held: dict[str, list[str]] = await host.held.remote()
    except (TimeoutError, RayError):
        return None
    return held


async def cluster_status(
    slot_resource: str, namespace: str, held_timeout: float = HELD_TIMEOUT
) -> ClusterStatus:
    """Every node of the cluster this process's Ray driver is joined to; the event loop
    never waits on Ray (its reads run on a worker thread, the box hosts are awaited)."""
    seen = await asyncio.to_thread(_snapshot, slot_resource, namespace)
    live = {n["NodeID"] for n in seen.nodes if n["Alive"]}
    asked = {node_id: host for node_id, host in seen.hosts.items() if node_id in live}
    answers = await asyncio.gather(*(_held(host, held_timeout) for host in asked.values()))
    held = dict(zip(asked, answers, strict=True))
    nodes = [_node(node, slot_resource, seen.taken, held) for node in seen.nodes]
    return ClusterStatus(nodes=sorted(nodes, key=lambda n: (not n.alive, n.name, n.node_id)))


NOTHING: dict[str, list[str]] = {"sessions": [], "runs": []}


def _node(
    node: dict[str, Any],
    slot_resource: str,
    taken: Counter[str],
    held: dict[str, dict[str, list[str]] | None],
) -> NodeStatus:
    """One node's status; ``held``: what each live box host said (None: no answer)."""
    node_id = node["NodeID"]
    labels = node.get("Labels") or {}
    holds = held.get(node_id, NOTHING)
    return NodeStatus(
        node_id=node_id,
        name=str(labels.get(NODE_LABEL) or node.get("NodeManagerHostname", "")),
        address=str(node.get("NodeManagerAddress", "")),
        alive=bool(node["Alive"]),
        slots=int(node.get("Resources", {}).get(slot_resource, 0)),
        taken=taken[node_id],
        box_host=node_id in held,
        sessions=None if holds is None else holds["sessions"],
        runs=None if holds is None else holds["runs"],
    )
