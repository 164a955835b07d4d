"""golem.service: the server (HTTP API, job queue, dashboard, triggers), and what a cluster
node serves (``node_app``). A client's engine on a server (``RemoteEngine``, and
``make_engine(config)`` that picks it when ``[remote] url`` is set) is ``golem.sandbox``'s."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golem.service.cluster import ClusterStatus, ClusterView, NodeStatus
    from golem.service.limits import ws_max_size
    from golem.service.logs import server_log_config
    from golem.service.node import NODE_PRINCIPAL, node_app
    from golem.service.state import ServerState

_HOMES = {
    "NODE_PRINCIPAL": "node",
    "ClusterStatus": "cluster",
    "ClusterView": "cluster",
    "NodeStatus": "cluster",
    "ServerState": "state",
    "node_app": "node",
    "server_log_config": "logs",
    "ws_max_size": "limits",
}
"""Each public name's module, imported on first use: importing one of the server's modules
must not pay for the others (a command's help for any of them)."""

__all__ = [
    "NODE_PRINCIPAL",
    "ClusterStatus",
    "ClusterView",
    "NodeStatus",
    "ServerState",
    "node_app",
    "server_log_config",
    "ws_max_size",
]


def __getattr__(name: str) -> Any:
    """A public name, its module imported now (see ``_HOMES``)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"golem.service.{home}"), name)
