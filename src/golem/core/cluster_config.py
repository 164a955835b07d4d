"""Configuration of scale-out on Ray (``[cluster]``): where the Ray cluster is and what a
session asks of a node. Unset ``ray_address``: one machine, no Ray imported."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ClusterConfig"]


class ClusterConfig(BaseModel):
    """``[cluster]``: boxes (and later runs) placed on a Ray cluster (extra ``golem[ray]``)."""

    model_config = ConfigDict(extra="forbid")

    ray_address: str | None = Field(
        None,
        description="The Ray cluster, as ray.init takes it (ray://head:10001, head:6379, "
        "or auto); None: boxes on this machine (no Ray).",
    )
    namespace: str = Field(
        "golem", description="Ray namespace of golem's actors (box hosts, leases)."
    )
    slot_resource: str = Field(
        "golem_box",
        description="The Ray custom resource a node advertises as its box slots (ray start "
        "--resources='{\"golem_box\": 8}'); a session holds 1 while it lives.",
    )
    node_state_dir: Path | None = Field(
        None,
        description="Where box hosts keep their state on their nodes (under it: "
        "cluster/<node name>); None: each node's own default state directory "
        "(GOLEM_STATE_DIR of the node's environment, else the XDG one).",
    )
    lease_timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds a session waits for a slot when the cluster is full; None: it "
        "waits in Ray's queue until one frees.",
    )
