"""Scale-out on Ray (``[cluster] ray_address``; extra ``golem[ray]``): boxes placed by Ray
on the nodes of a cluster, each node's boxes owned by its box host.

Layering: ``cli`` -> ``cluster`` -> ``service``. Nothing below imports this package, and
importing it imports Ray: the rest of golem names it only when the configuration sets
``[cluster] ray_address``."""

from golem.cluster.engine import ClusterEngine

__all__ = ["ClusterEngine"]
