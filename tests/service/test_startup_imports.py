"""`golem serve` starts without the SDKs of what no request has used yet: the MCP SDK is
imported by the first request to /mcp, the Slack SDK (and aiohttp under it) only when a
Slack bot token is set. Together they were a quarter of the server's start; every server
of the suite pays its start. The time itself is measured in bench/cli_startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bwrap

STARTED = """
import asyncio, json, sys
from golem.core.config import load_config
from golem.service.app import create_app

async def start_and_stop() -> None:
    app = create_app(load_config({"state_dir": sys.argv[1]}, files=[]))
    async with app.router.lifespan_context(app):
        pass

asyncio.run(start_and_stop())
print(json.dumps(sorted(sys.modules)))
"""

DEFERRED = ("mcp", "mcp_types", "aiohttp", "slack_sdk.web.async_client")


def test_a_server_starts_and_stops_without_importing_the_mcp_sdk_or_slacks_async_client(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    ran = subprocess.run(
        [sys.executable, "-c", STARTED, str(tmp_path / "state")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    modules: list[str] = json.loads(ran.stdout.splitlines()[-1])
    imported = [m for m in modules if any(m == d or m.startswith(d + ".") for d in DEFERRED)]
    assert imported == []
