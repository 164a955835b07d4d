"""The server: one FastAPI app, made by a factory, whose lifespan opens the store, the
engine and the run queue and closes them again. Nothing happens at import."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from golem import __version__
from golem.core.config import GolemConfig, load_config
from golem.sandbox import Engine
from golem.service.api import (
    automations,
    calls,
    cluster,
    credentials,
    files,
    interactive,
    keys,
    loops,
    runs,
    sessions,
)
from golem.service.api.github_hook import router as github_hook_router
from golem.service.api.gitlab_hook import router as gitlab_hook_router
from golem.service.api.linear_hook import router as linear_hook_router
from golem.service.api.slack_hook import router as slack_hook_router
from golem.service.dashboard import router as dashboard_router
from golem.service.health import Health
from golem.service.limits import BodyLimit
from golem.service.mcp import mount_mcp, serving_mcp
from golem.service.problems import ERROR_RESPONSES, install_problem_handlers
from golem.service.state import ServerState, running_state

__all__ = ["create_app"]

DESCRIPTION = """golem's API: sandboxed sessions (exec, streams, files, processes), runs
(a task in, a pull request out), their events, pull requests and API keys. Authenticate with
`Authorization: Bearer <key>`; every object belongs to the key's tenant. Errors are
problem details (application/problem+json). The same tools speak MCP (streamable HTTP) at
`/mcp`, with the same key."""


def create_app(
    config: GolemConfig | None = None, make_engine: Callable[[GolemConfig], Engine] | None = None
) -> FastAPI:
    """The app for ``config`` (default: golem.toml and GOLEM_* variables), its boxes made by
    ``make_engine``'s engine (default: this machine's)."""
    settings = config or load_config()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with running_state(settings, make_engine) as state, serving_mcp(app, state):
            app.state.golem = state
            yield

    app = FastAPI(title="golem", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    install_problem_handlers(app)
    app.add_middleware(BodyLimit)
    routers = (sessions, files, calls, interactive, runs, loops, automations, keys, credentials)
    for module in (*routers, cluster):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    app.include_router(github_hook_router, responses=ERROR_RESPONSES)
    app.include_router(gitlab_hook_router, responses=ERROR_RESPONSES)
    app.include_router(slack_hook_router, responses=ERROR_RESPONSES)
    app.include_router(linear_hook_router, responses=ERROR_RESPONSES)
    app.include_router(dashboard_router, responses=ERROR_RESPONSES)
    mount_mcp(app)

    @app.get("/healthz", tags=["server"])
    async def health() -> Health:
        """Whether the server answers (no key needed), and its store: ``degraded`` with
        why when the store does not."""
        state: ServerState = app.state.golem
        return await state.health.health()

    return app
