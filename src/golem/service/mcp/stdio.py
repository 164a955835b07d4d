"""``golem mcp``: golem's MCP server over stdio for a local user, on the same state
``golem serve`` builds (store, engine, sessions, the run queue's workers), acting as an
admin of the ``default`` tenant (whose runs ``golem runs`` shows)."""

from __future__ import annotations

from golem.core.config import GolemConfig
from golem.service.keys import Principal
from golem.service.mcp.host import Host
from golem.service.mcp.server import golem_mcp
from golem.service.state import running_state

__all__ = ["LOCAL", "serve_stdio"]

LOCAL = Principal(tenant="default", role="admin", key_id="local")
"""Who a stdio client acts as: the user who started ``golem mcp``."""


async def serve_stdio(config: GolemConfig) -> None:
    """Serve golem's tools on stdin and stdout until the client closes them."""
    async with running_state(config) as state:
        await golem_mcp(Host(state, local=LOCAL)).run_stdio_async()
