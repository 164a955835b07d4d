"""What a server on a Ray cluster says of its nodes (``GET /v1/cluster``, the dashboard's
cluster page, ``golem cluster status``): the models, and the one thing the server needs of
its engine to show them. No Ray here: ``golem.cluster`` fills them in."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

__all__ = ["ClusterStatus", "ClusterView", "NodeStatus"]


class NodeStatus(BaseModel):
    """One Ray node."""

    node_id: str
    name: str
    """Its ``golem-node`` label, else its host name."""
    address: str
    alive: bool
    slots: int
    """Box slots it advertises (``[cluster] slot_resource``)."""
    taken: int
    """Slots held (placement groups placed there): sessions, one-shot calls, runs."""
    box_host: bool
    """Whether golem's box host of the node is up (it starts with the node's first box)."""
    sessions: list[str] | None = []
    """Ids of the sessions its box host holds, for every control plane; None: the host
    did not answer in time (unknown, not none)."""
    runs: list[str] | None = []
    """Ids of the runs whose runner is on it; None: unknown, as for ``sessions``."""


class ClusterStatus(BaseModel):
    """Every node of the cluster, live ones first."""

    nodes: list[NodeStatus]


@runtime_checkable
class ClusterView(Protocol):
    """An engine that can say what its cluster holds (``ClusterEngine``)."""

    async def cluster_status(self) -> ClusterStatus:
        """The cluster's nodes, their slots and what each holds."""
        ...
