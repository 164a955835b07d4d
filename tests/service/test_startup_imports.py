"""`golem serve` and its runs load no SDK of what they have not used: the MCP SDK is
imported by the first request to /mcp or by a step that serves toolshed tools to a CLI
agent, the Slack SDK's client (and aiohttp under it) only when a Slack bot token is set.
They were nearly half of a server's imports, paid by every start and by the first run of
each server and `golem run`. The time itself is measured in bench/cli_startup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blueprint.repos import EXAMPLES, make_remote

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

RAN = """
import asyncio, json, sys
from golem.blueprint import Runner, RunRequest
from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.store import SqlStore

async def run() -> str:
    config = load_config({"state_dir": sys.argv[1]}, files=[])
    store = await SqlStore.open(config)
    try:
        async with LocalEngine(config) as engine:
            request = RunRequest(repo=sys.argv[2], task="Fix add()", model=sys.argv[3])
            state = await Runner(config, engine=engine, store=store).start(request)
    finally:
        await store.close()
    return state.status

print(asyncio.run(run()))
print(json.dumps(sorted(sys.modules)))
"""

DEFERRED = ("mcp", "mcp_types", "aiohttp", "slack_sdk.web.async_client")


def imported_in(tmp_path: Path, script: str, *args: str) -> tuple[list[str], list[str]]:
    """What ``script`` printed before its last line, and which of DEFERRED it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "state"), *args],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    *said, last = ran.stdout.splitlines()
    modules: list[str] = json.loads(last)
    return said, [m for m in modules if any(m == d or m.startswith(d + ".") for d in DEFERRED)]


def test_a_server_starts_and_stops_without_importing_the_mcp_sdk_or_slacks_async_client(
    tmp_path: Path,
) -> None:
    _, imported = imported_in(tmp_path, STARTED)
    assert imported == []


def test_a_run_whose_agent_serves_no_toolshed_tools_imports_no_mcp_sdk(
    reachable_dir: Path,
) -> None:
    remote = make_remote(reachable_dir)
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    said, imported = imported_in(reachable_dir, RAN, str(remote), model)
    assert said == ["succeeded"]
    assert imported == []
