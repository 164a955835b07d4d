"""Cost of the agent's file tools (read, ls, grep, glob) against its bash tool, in one run.

    .venv/bin/python bench/tools.py [--runs N] [--warmup W] [--json]

One persistent box with a small tree (20 files of 200 lines); after ``W`` warm-up rounds,
``N`` rounds each run every case once, interleaved, timed with time.perf_counter around
``tool.run(box, arguments)`` as the agent loop calls it. The bash tool runs ``true``: the
floor of any tool call in the box. Printed: p50 and p99 in milliseconds and each tool's
p50 as a ratio to the bash tool's (target: about 1x).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from typing import Any

from golem.agent.tools import make_tools
from golem.core import load_config
from golem.sandbox import LocalEngine
from latency import summarize  # bench/ is on sys.path

MIN_RUNS = 200
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "bash true": ("bash", {"command": "true"}),
    "read": ("read", {"path": "src/file07.py", "limit": 50}),
    "ls": ("ls", {"path": "src"}),
    "grep": ("grep", {"pattern": "value_1[0-9]", "path": "src"}),
    "glob": ("glob", {"pattern": "**/*.py"}),
}
FLOOR = "bash true"


async def measure(runs: int, warmup: int) -> dict[str, dict[str, float]]:
    state = tempfile.mkdtemp(prefix="golem-bench-tools-")
    config = load_config({"state_dir": state}, files=[])
    tools = {name: make_tools([tool])[0] for name, (tool, _) in CASES.items()}
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    async with LocalEngine(config) as engine, engine.session() as box:
        for index in range(20):
            lines = "".join(f"value_{n} = {n * index}\n" for n in range(200))
            await box.put_file(f"src/file{index:02}.py", lines)
        for round_ in range(warmup + runs):
            for name, (_, arguments) in CASES.items():
                started = time.perf_counter()
                result = await tools[name].run(box, arguments)
                elapsed = time.perf_counter() - started
                assert not result.is_error, (name, result.output)
                if round_ >= warmup:
                    samples[name].append(elapsed)
    return {name: summarize(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help="timed rounds (>= 200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}, for a meaningful p99")
    load = os.getloadavg()[0]
    stats = asyncio.run(measure(args.runs, args.warmup))
    floor = stats[FLOOR]["p50"]
    for values in stats.values():
        values["ratio"] = values["p50"] / floor
    if args.json:
        print(json.dumps(stats, indent=2))
        return
    print(f"{args.runs} rounds, load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'case':<12} {'p50 ms':>8} {'p99 ms':>8} {'p50 / bash':>11}")
    for name, values in stats.items():
        print(f"{name:<12} {values['p50']:8.2f} {values['p99']:8.2f} {values['ratio']:10.2f}x")


if __name__ == "__main__":
    main()
