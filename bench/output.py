"""Cost of a call's output on its way out of the box, against the floor of the same command
run bare on the host, measured in one run on this machine.

    .venv/bin/python bench/output.py [--runs N] [--warmup W] [--mib M] [--json]

After ``W`` warm-up rounds, ``N`` interleaved rounds run each case once:

* floor ``subprocess``: ``head -c M MiB /dev/urandom`` with its output captured;
* golem ``execute``: the same command through ``box.execute`` in one long-lived box (the
  result holds the box's bytes; secrets masked, none set here);
* golem ``stream``: the same through ``box.stream``, the chunks joined.

Random bytes are the worst case for anything that decodes output as text. Printed: p50 and
p99 (ms), MiB/s at p50, and each golem case's p50 over the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from typing import Any

from golem.core import load_config
from golem.sandbox import ExecRequest, LocalEngine, OutputEvent
from sandbox import Case, Stats, measure  # bench/ is on sys.path

MIN_RUNS = 50
FLOOR = "floor: subprocess"
EXECUTE = "golem: execute"
STREAM = "golem: stream"


def command(mib: int) -> list[str]:
    return ["head", "-c", str(mib * 1024 * 1024), "/dev/urandom"]


async def all_cases(state_dir: str, runs: int, warmup: int, mib: int) -> dict[str, Stats]:
    """The floor and golem's two ways of reading a call's output."""
    argv, size = command(mib), mib * 1024 * 1024
    config = load_config({"state_dir": state_dir}, files=[])
    async with LocalEngine(config) as engine:
        spec = engine.spec(max_output_bytes=2 * size)
        async with engine.session(spec) as box:

            async def floor() -> int:
                done = subprocess.run(argv, capture_output=True, check=False)  # noqa: ASYNC221
                return 0 if len(done.stdout) == size else 1

            async def execute() -> int:
                result = await box.execute(ExecRequest(cmd=argv))
                return 0 if len(result.stdout) == size else 1

            async def stream() -> int:
                chunks = [e.data async for e in box.stream(argv) if isinstance(e, OutputEvent)]
                return 0 if sum(len(chunk) for chunk in chunks) == size else 1

            cases: dict[str, Case] = {FLOOR: floor, EXECUTE: execute, STREAM: stream}
            return await measure(cases, runs, warmup)


def report(cases: dict[str, Stats], mib: int) -> dict[str, Any]:
    floor = cases[FLOOR]["p50"]
    return {
        "mib": mib,
        "cases": cases,
        "mib_per_s": {name: mib / (stats["p50"] / 1000) for name, stats in cases.items()},
        "ratio_to_floor": {name: cases[name]["p50"] / floor for name in (EXECUTE, STREAM)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--mib", type=int, default=4, help="output of each call, in MiB")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        cases = asyncio.run(all_cases(state_dir, args.runs, args.warmup, args.mib))
    figures = report(cases, args.mib)
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        return
    print(f"{args.mib} MiB of random bytes per call, {args.runs} rounds")
    for name, stats in cases.items():
        rate = figures["mib_per_s"][name]
        ratio = figures["ratio_to_floor"].get(name)
        versus = f"  {ratio:.2f}x the floor" if ratio else ""
        print(f"{name:20} p50 {stats['p50']:8.1f} ms  p99 {stats['p99']:8.1f} ms  "
              f"{rate:7.0f} MiB/s{versus}")  # fmt: skip


if __name__ == "__main__":
    main()
