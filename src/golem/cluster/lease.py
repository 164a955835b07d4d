"""The control plane's token on the cluster: one ``Owner`` actor per ClusterEngine.

A session's slot is a Ray placement group (no process); what a box host needs besides is
to learn when the control plane that opened a session is gone for good, and Ray ends an
actor with the driver that owns it. Kept apart, importing nothing of golem's: the owner's
worker process imports this module only (the engine's imports cost ~2.5 s there)."""

from __future__ import annotations

import asyncio

__all__ = ["Owner"]


class Owner:
    """Lives as long as the control plane's Ray driver."""

    async def hold(self) -> None:
        """Never returns: its caller learns of the owner's death by the error."""
        await asyncio.Event().wait()

    def node(self) -> str:
        """The id of the Ray node it lives on (its control plane's)."""
        import ray  # noqa: PLC0415 - in the actor's process, where Ray is loaded already

        return str(ray.get_runtime_context().get_node_id())
