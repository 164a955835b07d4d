"""`golem mcp`: golem's MCP server on stdin and stdout, for a local MCP client."""

from __future__ import annotations

import asyncio
from pathlib import Path

from golem.cli import options
from golem.core.errors import ConfigError

__all__ = ["mcp_command"]


def mcp_command(config_file: Path | None = options.CONFIG) -> None:
    """Serve golem's boxes and runs as MCP tools on stdin and stdout (for Claude Code,
    Cursor or any MCP client).

    It opens golem's store and engine as `golem serve` does and acts as an admin of the
    default tenant: its runs are the ones `golem runs` shows, and they run while it does.
    For a shared server, point the client at `golem serve`'s /mcp with an API key instead.
    """
    from golem.core.config import load_config
    from golem.service.mcp import serve_stdio

    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file {config_file} does not exist")
    config = load_config(files=[config_file] if config_file is not None else None)
    asyncio.run(serve_stdio(config))
