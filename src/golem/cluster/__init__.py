"""Scale-out on Ray (``[cluster] ray_address``; extra ``golem[ray]``): boxes placed by Ray
on the nodes of a cluster, each node's boxes owned by its box host.

Layering: ``cli`` -> ``cluster`` -> ``service``. Nothing below imports this package, and
importing it imports Ray: the rest of golem names it only when the configuration sets
``[cluster] ray_address``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golem.cluster.engine import ClusterEngine

__all__ = ["ClusterEngine"]


def __getattr__(name: str) -> Any:
    """``ClusterEngine`` on first use: a lease's worker imports ``golem.cluster.lease``
    only, and must not pay for the engine's imports (the service layer)."""
    if name == "ClusterEngine":
        from golem.cluster.engine import ClusterEngine  # noqa: PLC0415

        return ClusterEngine
    raise AttributeError(name)
