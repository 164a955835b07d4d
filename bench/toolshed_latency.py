"""Latency golem adds to an MCP tool call: through the toolshed against the SDK directly.

    .venv/bin/python bench/toolshed_latency.py [--runs N] [--warmup W] [--json]

The same real server (npm's @modelcontextprotocol/server-everything, installed once in the
test cache) and the same call (``echo``), four ways, interleaved round by round:

* ``sdk stdio``: the SDK's ClientSession over ``stdio_client``, the server a host process;
* ``golem stdio``: golem's agent Tool for it, the server in a bubblewrap box (golem's way:
  the call crosses the box's supervisor);
* ``sdk http`` and ``golem http``: the server on loopback over streamable HTTP, called by
  the SDK's ``streamable_http_client`` and by golem's Tool (egress check, credential
  header and masking included).

Printed: p50 and p99 in milliseconds, and golem's p50 as a ratio to the SDK's for each
transport. Timed with time.perf_counter around one call as the agent loop makes it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from golem.context.toolshed import Toolshed
from golem.core import load_config
from golem.core.config import GolemConfig
from golem.sandbox import Box, LocalEngine
from latency import summarize  # bench/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the servers' install cache lives with the tests

from tests.context.toolshed.servers import (  # noqa: E402
    EVERYTHING,
    copy_into,
    entry,
    everything_over_http,
    npm_package,
)

MIN_RUNS = 200
ARGUMENTS = {"message": "how long does this take?"}
Call = Callable[[], Awaitable[object]]


def shed_config(state: str, port: int, script: str) -> GolemConfig:
    return load_config(
        {
            "state_dir": state,
            "toolshed": {
                "servers": [
                    {"name": "boxed", "command": ["node", script, "stdio"]},
                    {"name": "web", "url": f"http://127.0.0.1:{port}/mcp"},
                ]
            },
        },
        files=[],
    )


async def golem_calls(box: Box, shed: Toolshed) -> dict[str, Call]:
    [boxed] = await shed.tools(box, ["boxed.echo"])
    [web] = await shed.tools(box, ["web.echo"])
    return {
        "golem stdio": lambda: boxed.run(box, ARGUMENTS),
        "golem http": lambda: web.run(box, ARGUMENTS),
    }


async def sdk_calls(stack: AsyncExitStack, port: int) -> dict[str, Call]:
    host_script = entry(EVERYTHING, str(npm_package(*EVERYTHING)))
    params = StdioServerParameters(command="node", args=[host_script, "stdio"])
    read, write = await stack.enter_async_context(stdio_client(params))
    stdio = await stack.enter_async_context(ClientSession(read, write))
    await stdio.initialize()
    url = f"http://127.0.0.1:{port}/mcp"
    read, write = await stack.enter_async_context(streamable_http_client(url))
    http = await stack.enter_async_context(ClientSession(read, write))
    await http.initialize()
    return {
        "sdk stdio": lambda: stdio.call_tool("echo", ARGUMENTS),
        "sdk http": lambda: http.call_tool("echo", ARGUMENTS),
    }


async def measure(runs: int, warmup: int, port: int) -> dict[str, dict[str, float]]:
    state = tempfile.mkdtemp(prefix="golem-bench-")
    base = load_config({"state_dir": state}, files=[])
    egress = {"egress": {"allow_cidrs": ["127.0.0.1/32"], "ports": [port]}}
    async with (
        LocalEngine(base) as engine,
        engine.session(egress) as box,
        AsyncExitStack() as stack,
    ):
        script = entry(EVERYTHING, await copy_into(box, EVERYTHING))
        shed = Toolshed(shed_config(state, port, script))
        stack.push_async_callback(shed.close)
        calls = {**await sdk_calls(stack, port), **await golem_calls(box, shed)}
        samples: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(warmup + runs):
            for name, call in calls.items():
                started = time.perf_counter()
                await call()
                if round_ >= warmup:
                    samples[name].append(time.perf_counter() - started)
    return {name: summarize(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help="timed rounds (>= 200)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed rounds first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}, for a meaningful p99")
    load = os.getloadavg()[0]
    with everything_over_http() as port:
        stats = asyncio.run(measure(args.runs, args.warmup, port))
    ratios = {
        transport: stats[f"golem {transport}"]["p50"] / stats[f"sdk {transport}"]["p50"]
        for transport in ("stdio", "http")
    }
    if args.json:
        print(json.dumps({"calls": stats, "golem_over_sdk_p50": ratios}, indent=2))
        return
    print(f"{args.runs} rounds, load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'case':<12} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in stats.items():
        print(f"{name:<12} {values['p50']:8.2f} {values['p99']:8.2f}")
    for transport, ratio in ratios.items():
        print(f"golem / sdk ({transport}) p50: {ratio:.2f}x")


if __name__ == "__main__":
    main()
