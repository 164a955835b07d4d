"""The Ray cluster a server's boxes run on (admin only): its nodes, their box slots, and
the sessions and runs each holds."""

from __future__ import annotations

from fastapi import APIRouter

from golem.core.errors import Problem
from golem.service.api.deps import Admin, State
from golem.service.cluster import ClusterStatus, ClusterView

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["cluster"])


@router.get("/cluster")
async def cluster(_admin: Admin, state: State) -> ClusterStatus:
    """Every node of the cluster (live ones first): its slots, how many are taken, and the
    ids of the sessions and runs its box host holds (null: the host did not answer)."""
    engine = state.engine
    if not isinstance(engine, ClusterView):
        raise Problem(
            404,
            "this server runs its boxes on its own machine, not on a cluster: set "
            "[cluster] ray_address (extra golem[ray]) to spread them over a Ray cluster",
        )
    return await engine.cluster_status()
