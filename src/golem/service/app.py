"""The server: one FastAPI app, made by a factory, whose lifespan opens the store, the
engine and the run queue and closes them again. Nothing happens at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from golem import __version__
from golem.core.config import GolemConfig, load_config
from golem.sandbox import LocalEngine
from golem.service.api import calls, credentials, files, interactive, keys, runs, sessions
from golem.service.api.github_hook import router as github_hook_router
from golem.service.api.gitlab_hook import router as gitlab_hook_router
from golem.service.dashboard import router as dashboard_router
from golem.service.health import Health, StoreProbe
from golem.service.keys import KeyStore
from golem.service.limits import BodyLimit
from golem.service.problems import ERROR_RESPONSES, install_problem_handlers
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.service.state import ServerState, server_id
from golem.store import SqlStore

__all__ = ["create_app"]

log = logging.getLogger("golem.service")
DESCRIPTION = """golem's API: sandboxed sessions (exec, streams, files, processes), runs
(a task in, a pull request out), their events, pull requests and API keys. Authenticate with
`Authorization: Bearer <key>`; every object belongs to the key's tenant. Errors are
problem details (application/problem+json)."""


def create_app(config: GolemConfig | None = None) -> FastAPI:
    """The app for ``config`` (default: golem.toml and GOLEM_* variables)."""
    settings = config or load_config()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = await SqlStore.open(settings, tenant=None)  # the server reads all; scopes per key
        engine = LocalEngine(settings)
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
        app.state.golem = state
        await engine.start()
        await engine.prune()  # boxes of a server that died: sessions do not outlive it
        await state.queue.start()
        try:
            yield
        finally:  # each step runs whatever the one before it did (a store away, say)
            await _step("stopping the run queue", state.queue.stop())
            await _step("closing the sessions", state.sessions.close_all())
            await _step("closing the engine", engine.close())
            await _step("closing the store", store.close())

    app = FastAPI(title="golem", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    install_problem_handlers(app)
    app.add_middleware(BodyLimit)
    for module in (sessions, files, calls, interactive, runs, keys, credentials):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    app.include_router(github_hook_router, responses=ERROR_RESPONSES)
    app.include_router(gitlab_hook_router, responses=ERROR_RESPONSES)
    app.include_router(dashboard_router, responses=ERROR_RESPONSES)

    @app.get("/healthz", tags=["server"])
    async def health() -> Health:
        """Whether the server answers (no key needed), and its store: ``degraded`` with
        why when the store does not."""
        state: ServerState = app.state.golem
        return await state.health.health()

    return app


async def _step(what: str, work: Awaitable[object]) -> None:
    """One step of the shutdown: its failure is logged, and the next steps still run."""
    try:
        await work
    except Exception:
        log.exception("shutdown: %s failed; going on", what)
