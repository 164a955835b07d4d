"""The lease: a session's claim on one box slot of a node, as a Ray actor.

Kept apart, importing nothing of golem's: each lease is an actor, so a Ray worker process
of its own, and that worker imports this module to make it; importing golem.cluster.engine
(FastAPI, the service layer) there cost about 2.5 s per session on the test machine."""

from __future__ import annotations

import asyncio

import ray

__all__ = ["Lease"]


class Lease:
    """Placed by Ray on a node with a free slot; lives as long as its session."""

    def __init__(self) -> None:
        self._node = ray.get_runtime_context().get_node_id()

    async def node(self) -> str:
        """The node Ray placed this lease on."""
        return self._node

    async def hold(self) -> None:
        """Never returns: its caller learns of the lease's death (its node's, or its
        owner's) by the error."""
        await asyncio.Event().wait()
