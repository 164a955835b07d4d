"""What one server process shares between requests: config, engine, store, keys,
sessions, the run queue and the tenants' forge credentials. It lives on
``app.state.golem``; nothing is module-global."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from golem.core.config import GolemConfig
from golem.sandbox import Engine
from golem.service.forge_access import ForgeAccess
from golem.service.health import StoreProbe
from golem.service.keys import KeyStore
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.store import Store

__all__ = ["ServerState", "server_id"]


def server_id() -> str:
    """This server process: host and pid (a run records which server runs it)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class ServerState:
    """The server's long-lived parts."""

    config: GolemConfig
    engine: Engine
    store: Store
    keys: KeyStore
    sessions: SessionRegistry
    queue: RunQueue
    health: StoreProbe
    id: str = field(default_factory=server_id)

    @property
    def forge_access(self) -> ForgeAccess:
        """Which forge tokens each tenant's runs get (the queue's, which gives them)."""
        return self.queue.forge_access
