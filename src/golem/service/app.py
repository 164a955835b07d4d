"""The server: one FastAPI app, made by a factory, whose lifespan opens the store, the
engine and the run queue and closes them again. Nothing happens at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from pydantic import BaseModel

from golem import __version__
from golem.core.config import GolemConfig, load_config
from golem.sandbox import LocalEngine
from golem.service.api import calls, credentials, files, interactive, keys, runs, sessions
from golem.service.api.github_hook import router as github_hook_router
from golem.service.dashboard import router as dashboard_router
from golem.service.keys import KeyStore
from golem.service.limits import BodyLimit
from golem.service.problems import ERROR_RESPONSES, install_problem_handlers
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.service.state import ServerState, server_id
from golem.store import SqlStore

__all__ = ["create_app"]

DESCRIPTION = """golem's API: sandboxed sessions (exec, streams, files, processes), runs
(a task in, a pull request out), their events, pull requests and API keys. Authenticate with
`Authorization: Bearer <key>`; every object belongs to the key's tenant. Errors are
problem details (application/problem+json)."""


class Health(BaseModel):
    """The server answers."""

    status: str
    server: str
    version: str


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
            id=identity,
        )
        app.state.golem = state
        await engine.start()
        await engine.prune()  # boxes of a server that died: sessions do not outlive it
        await state.queue.start()
        try:
            yield
        finally:
            await state.queue.stop()
            await state.sessions.close_all()
            await engine.close()
            await store.close()

    app = FastAPI(title="golem", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    install_problem_handlers(app)
    app.add_middleware(BodyLimit)
    for module in (sessions, files, calls, interactive, runs, keys, credentials):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    app.include_router(github_hook_router, responses=ERROR_RESPONSES)
    app.include_router(dashboard_router, responses=ERROR_RESPONSES)

    @app.get("/healthz", tags=["server"])
    async def health() -> Health:
        """Whether the server answers (no key needed)."""
        state: ServerState = app.state.golem
        return Health(status="ok", server=state.id, version=__version__)

    return app
