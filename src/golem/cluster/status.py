"""What the cluster holds, as Ray knows it: its nodes, their box slots and how many are
taken, and whether golem's box host runs there (``golem cluster status``)."""

from __future__ import annotations

from collections import Counter

import ray
from pydantic import BaseModel
from ray.util.placement_group import placement_group_table

from golem.cluster.boxhost import NODE_LABEL
from golem.cluster.nodes import BOX_HOST_PREFIX

__all__ = ["NodeStatus", "cluster_status"]


class NodeStatus(BaseModel):
    """One Ray node."""

    node_id: str
    name: str
    address: str
    alive: bool
    slots: int
    """Box slots it advertises (``[cluster] slot_resource``)."""
    taken: int
    """Slots held by sessions (placement groups placed there)."""
    box_host: bool
    """Whether golem's box host of the node is up (it starts with the node's first box)."""


def cluster_status(slot_resource: str, namespace: str) -> list[NodeStatus]:
    """Every node of the cluster this process's Ray driver is joined to."""
    taken: Counter[str] = Counter()
    for group in placement_group_table().values():
        if group.get("state") != "CREATED":
            continue
        for index, bundle in group.get("bundles", {}).items():
            if slot_resource in bundle:
                taken[group["bundles_to_node_id"][index]] += int(bundle[slot_resource])
    hosts = {
        named["name"].removeprefix(BOX_HOST_PREFIX)
        for named in ray.util.list_named_actors(all_namespaces=True)
        if named["namespace"] == namespace and named["name"].startswith(BOX_HOST_PREFIX)
    }
    found = []
    for node in ray.nodes():  # type: ignore[no-untyped-call,unused-ignore]
        node_id = node["NodeID"]
        labels = node.get("Labels") or {}
        found.append(
            NodeStatus(
                node_id=node_id,
                name=str(labels.get(NODE_LABEL) or node.get("NodeManagerHostname", "")),
                address=str(node.get("NodeManagerAddress", "")),
                alive=bool(node["Alive"]),
                slots=int(node.get("Resources", {}).get(slot_resource, 0)),
                taken=taken[node_id],
                box_host=node_id in hosts and bool(node["Alive"]),
            )
        )
    return sorted(found, key=lambda n: (not n.alive, n.name, n.node_id))
