"""A cluster node's server: ``golem serve``'s session routes alone (sessions, files, calls,
interactive), on the node's own engine, for the control plane's ``RemoteEngine``. The one
thing ``golem.cluster`` takes from the service to serve a node: no runs, keys, triggers,
dashboard or MCP here; its only key is the node server's admin key."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI

from golem import __version__
from golem.core.config import GolemConfig
from golem.sandbox import LocalEngine
from golem.service.api import calls, files, interactive, sessions
from golem.service.health import StoreProbe
from golem.service.keys import ADMIN_TENANT, KeyStore, Principal
from golem.service.limits import BodyLimit
from golem.service.problems import ERROR_RESPONSES, install_problem_handlers
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.service.state import ServerState, server_id
from golem.store import SqlStore

__all__ = ["NODE_PRINCIPAL", "node_app"]

NODE_PRINCIPAL = Principal(tenant=ADMIN_TENANT, role="admin", key_id="admin")
"""Whom a node server's key acts for: its admin (the tenant of every session on it)."""


@asynccontextmanager
async def node_state(settings: GolemConfig) -> AsyncIterator[ServerState]:
    """What the session routes need on a node: its engine (pruned of what a server before
    it left) and session registry; the store only holds nothing (no keys, no runs)."""
    store = await SqlStore.open(settings, tenant=None)
    engine = LocalEngine(settings)
    identity = server_id()
    state = ServerState(
        config=settings,
        engine=engine,
        store=store,
        keys=KeyStore(store, settings.server.admin_key_env),
        sessions=SessionRegistry(settings, engine),
        queue=RunQueue(settings, engine, store, identity),  # never started: runs are not here
        health=StoreProbe(store, identity),
        id=identity,
    )
    await engine.start()
    await engine.prune()  # a server before this one died: its boxes go
    try:
        yield state
    finally:
        try:
            await state.sessions.close_all()
            await engine.close()
        finally:
            await store.close()


def node_app(
    settings: GolemConfig,
    serving: Callable[[ServerState], AbstractAsyncContextManager[None]],
    failed: Callable[[BaseException], None],
) -> FastAPI:
    """The session routes of ``golem serve`` for ``settings`` (its admin key from
    ``[server] admin_key_env``). Once its state is open, the app serves inside
    ``serving(state)`` (entered on the server's loop, exited before the state closes);
    ``failed`` is called with the error that kept the state from opening (no backend on
    the node, ...)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            try:
                state = await stack.enter_async_context(node_state(settings))
            except Exception as exc:
                failed(exc)
                raise
            app.state.golem = state
            await stack.enter_async_context(serving(state))
            yield

    app = FastAPI(title="golem box host", version=__version__, lifespan=lifespan)
    install_problem_handlers(app)
    app.add_middleware(BodyLimit)
    for module in (sessions, files, calls, interactive):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    return app
