"""What one server process shares between requests: config, engine, store, keys,
sessions, the run queue and the tenants' forge credentials. It lives on
``app.state.golem`` (``golem mcp`` builds the same); nothing is module-global."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from golem.core.config import GolemConfig
from golem.sandbox import Engine, LocalEngine
from golem.service.forge_access import ForgeAccess
from golem.service.health import StoreProbe
from golem.service.keys import KeyStore
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.store import SqlStore, Store

__all__ = ["ServerState", "running_state", "server_id"]

log = logging.getLogger("golem.service")


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


@asynccontextmanager
async def running_state(
    settings: GolemConfig, make_engine: Callable[[GolemConfig], Engine] | None = None
) -> AsyncIterator[ServerState]:
    """The server's state, open: store, engine, sessions and the run queue's workers (for
    ``golem serve`` and ``golem mcp`` alike); closed again when the block ends. The engine:
    ``make_engine``'s (a cluster's, made by the CLI), else this machine's."""
    store = await SqlStore.open(settings, tenant=None)  # the server reads all; scopes per key
    engine = (make_engine or LocalEngine)(settings)
    identity = server_id()
    state = ServerState(
        config=settings,
        engine=engine,
        store=store,
        keys=KeyStore(store, settings.server.admin_key_env),
        sessions=SessionRegistry(settings, engine),
        queue=RunQueue(settings, engine, store, identity),
        health=StoreProbe(store, identity),
        id=identity,
    )
    for problem in settings.engine.weaker_backends():  # its boxes say what they really got
        log.warning("isolation: %s", problem)
    await engine.start()
    await engine.prune()  # boxes of a server that died: sessions do not outlive it
    await state.queue.start()
    try:
        yield state
    finally:  # each step runs whatever the one before it did (a store away, say)
        await _step("stopping the run queue", state.queue.stop())
        await _step("closing the sessions", state.sessions.close_all())
        await _step("closing the engine", engine.close())
        await _step("closing the store", store.close())


async def _step(what: str, work: Awaitable[object]) -> None:
    """One step of the shutdown: its failure is logged, and the next steps still run."""
    try:
        await work
    except Exception:
        log.exception("shutdown: %s failed; going on", what)
