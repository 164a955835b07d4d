"""A box's private container engine: its cold start against the box's own, on this host.

    .venv/bin/python bench/containers.py [--runs N] [--warmup W] [--json]

Cases, interleaved round by round (so load from elsewhere hits each alike), every box cold
(no warm pool; a box with containers is never pooled anyway), on the microvm backend with
golem's devbox:

* ``box: cold start``: a microVM box started and its first ``true`` answered;
* ``containers: cold start to a ready engine``: a box with ``containers`` started and its
  first ``docker info`` answered (the guest's boot, dockerd's start, golem/busybox imported);
* ``containers: docker run``: ``docker run --rm golem/busybox true`` in a live box with
  containers (a container's own start, once the engine is up).

Each is given as p50/p99 and the engine's start as a ratio to the box's own. Under TCG
every figure is seconds: keep ``--runs`` small.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

from golem.core import load_config
from golem.core.config import MicroVMBackendConfig
from golem.sandbox import Box, LocalEngine
from golem.sandbox.probe import alone
from latency import summarize  # bench/ is on sys.path

BOX, ENGINE, RUN = (
    "box: cold start",
    "containers: cold start to a ready engine",
    "containers: docker run",
)
CONTAINERS = {"containers": True, "pids": 1024}


async def _first_answer(engine: LocalEngine, spec: dict[str, Any], argv: list[str]) -> float:
    """Seconds from asking for a box of ``spec`` to the answer of ``argv`` in it."""
    start = time.perf_counter()
    async with engine.session(engine.spec(**spec)) as box:
        result = await box.execute(argv)
        elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise RuntimeError(f"{argv}: exited with {result.exit_code}: {result.stderr_text}")
    return elapsed


async def _docker_run(box: Box) -> float:
    start = time.perf_counter()
    result = await box.execute(["docker", "run", "--rm", "golem/busybox", "true"])
    elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise RuntimeError(f"docker run: exited with {result.exit_code}: {result.stderr_text}")
    return elapsed


async def run_all(runs: int, warmup: int, state_dir: str) -> dict[str, Any]:
    """Every case, ``warmup`` + ``runs`` interleaved rounds."""
    base = load_config({"state_dir": state_dir}, files=[])
    config = alone(base, MicroVMBackendConfig())
    samples: dict[str, list[float]] = {BOX: [], ENGINE: [], RUN: []}
    async with AsyncExitStack() as stack:
        engine = await stack.enter_async_context(LocalEngine(config))
        live = await stack.enter_async_context(engine.session(engine.spec(**CONTAINERS)))
        for round_ in range(warmup + runs):
            took = {
                BOX: await _first_answer(engine, {}, ["true"]),
                ENGINE: await _first_answer(engine, CONTAINERS, ["docker", "info"]),
                RUN: await _docker_run(live),
            }
            if round_ >= warmup:
                for name, seconds in took.items():
                    samples[name].append(seconds)
        accel = engine.backend.accel  # type: ignore[attr-defined]
    cases = {name: summarize(values) for name, values in samples.items()}
    return {
        "cases": cases,
        "engine_over_box_p50": cases[ENGINE]["p50"] / cases[BOX]["p50"],
        "accel": accel,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        report = asyncio.run(run_all(options.runs, options.warmup, state_dir))
    report["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    report["runs"], report["warmup"] = options.runs, options.warmup
    if options.json:
        print(json.dumps(report, indent=2))
        return
    print(f"golem containers benchmark: microvm ({report['accel']}), {os.cpu_count()} CPUs")
    print(f"{'case':<44} {'p50 ms':>10} {'p99 ms':>10} {'runs':>5}")
    for name, stats in report["cases"].items():
        print(f"{name:<44} {stats['p50']:10.0f} {stats['p99']:10.0f} {stats['runs']:5.0f}")
    print(f"engine ready / box cold start (p50): {report['engine_over_box_p50']:.2f}x")


if __name__ == "__main__":
    main()
