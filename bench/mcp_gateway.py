"""Added latency of a toolshed tool call an external CLI makes: from inside a filtered box,
through its proxy's host route, to the step's MCP gateway on the host and back, against
the same tool called directly as golem's own agent calls it.

    .venv/bin/python bench/mcp_gateway.py [--runs N] [--warmup W] [--json]

One filtered bubblewrap box and one gateway serving ``read`` and a tool that does nothing
(``noop``: the gateway's own floor). A stdlib client in the box makes ``W + N`` calls of
each over one kept-alive connection, timing each with time.perf_counter; the host times
``W + N`` direct ``read.run(box, ...)`` calls. Printed: p50 and p99 in milliseconds, and the
p50 of ``read`` through the gateway minus its direct p50 (the latency golem adds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

from golem.agent import ToolResult, ToolSpec, make_tools
from golem.context.toolshed.gateway import tools_for_box
from golem.core import load_config
from golem.sandbox import Box, ExecRequest, LocalEngine
from latency import summarize  # bench/ is on sys.path

MIN_RUNS = 200
READ = {"path": "notes.txt"}

CLIENT = r"""
import http.client, json, sys, time, urllib.parse
url, runs, cases = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
parts = urllib.parse.urlsplit(url)
connection = http.client.HTTPConnection(parts.hostname, parts.port)
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
times = {}
for name, arguments in cases.items():
    times[name] = []
    for index in range(runs):
        body = json.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call",
                           "params": {"name": name, "arguments": arguments}})
        started = time.perf_counter()
        connection.request("POST", parts.path, body, headers)
        answer = connection.getresponse()
        text = answer.read()
        times[name].append(time.perf_counter() - started)
        assert answer.status == 200 and b'"isError":false' in text.replace(b" ", b""), text
print(json.dumps(times))
"""


class Noop:
    """A tool that does nothing: what the gateway and the route cost on their own."""

    spec = ToolSpec(name="noop", description="Does nothing.", parameters={"type": "object"})

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult("ok")


async def measure(runs: int, warmup: int) -> dict[str, dict[str, float]]:
    state = tempfile.mkdtemp(prefix="golem-bench-gateway-")
    config = load_config({"state_dir": state}, files=[])
    [read] = make_tools(["read"])
    async with LocalEngine(config) as engine:
        spec = engine.spec(network="filtered", timeout=600)
        async with engine.session(spec) as box:
            await box.put_file("/workspace/notes.txt", "".join(f"line {n}\n" for n in range(50)))
            direct: list[float] = []
            for _ in range(warmup + runs):
                started = time.perf_counter()
                await read.run(box, READ)
                direct.append(time.perf_counter() - started)
            async with tools_for_box([read, Noop()], box) as url:
                cases = json.dumps({"noop": {}, "read": READ})
                argv = ["python3", "-c", CLIENT, url, str(warmup + runs), cases]
                result = await box.execute(ExecRequest(cmd=argv, timeout=600))
    assert result.exit_code == 0, result.stderr_text
    through: dict[str, list[float]] = json.loads(result.stdout_text)
    return {
        "read, direct": summarize(direct[warmup:]),
        "noop, through the gateway": summarize(through["noop"][warmup:]),
        "read, through the gateway": summarize(through["read"][warmup:]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    numbers = asyncio.run(measure(max(args.runs, 2), args.warmup))
    added = numbers["read, through the gateway"]["p50"] - numbers["read, direct"]["p50"]
    if args.json:
        print(json.dumps({**numbers, "added_p50_ms": added}, indent=2))
        return
    for name, stats in numbers.items():
        print(f"{name:28} p50 {stats['p50']:7.2f} ms   p99 {stats['p99']:7.2f} ms")
    print(f"added by golem's gateway and route (p50): {added:.2f} ms")


if __name__ == "__main__":
    main()
