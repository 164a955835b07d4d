"""microVM cases: golem's microvm backend beside a bare boot of the same kernel and disk.

    .venv/bin/python bench/microvm_cases.py [--cold 10] [--runs 100] [--warmup 1]
                                            [--image DIR] [--json]

* floor ``bare boot``: ``golem.sandbox.backends.microvm.bench.bare_boot``, the floor
  bench/isolation.py takes too: QEMU with the same command line, guest kernel,
  accelerator, VM size, host user and root disk as a default box, and an initramfs of
  busybox and the virtio modules whose init mounts the disk and echoes on a virtio-serial
  port: from spawning QEMU to reading the echo;
* golem ``cold start``: ``engine.session()`` of an engine with the pool off, to the answer
  of its first ``true`` (box record, initramfs, QEMU, the guest's init, the supervisor's
  start-up, hello, configure, the call); the box's end is not timed;
* golem ``warm start``: ``engine.session()`` taking a pooled (booted, wiped) box, until the
  session is ready, and until its first ``true`` has answered; its release (a wipe, then
  back to the pool) is not timed;
* golem ``true round trip``: ``box.execute(["true"])`` in one box;
* golem ``1 MiB round trip``: 1 MiB written with ``put_file`` and read back with ``get_file``.

Cold starts and bare boots alternate, and so do the quick cases, so load from elsewhere
hits each alike. Every figure is in milliseconds (p50, p99, min, max) with its ratio to the
floor's p50. Goals (issue 28): a cold box within 1.5x the bare boot; a pooled box in under
10 ms. Under TCG (no hardware virtualisation) every guest instruction is emulated: the
boot and every call inside the guest are slow, and the warm pool is what keeps a box quick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from golem.core import GolemConfig, load_config
from golem.core.config import MicroVMBackendConfig
from golem.sandbox import Box, LocalEngine
from golem.sandbox.backends.microvm import MicroVMBackend
from golem.sandbox.backends.microvm.bench import bare_boot

Case = Callable[[], Awaitable[tuple[int, float]]]
"""A case runs once: its exit code (0: it worked) and the seconds it took."""

FLOOR = "floor: bare QEMU boot to a guest echo"
COLD = "microvm: cold start to first exec"
WARM = "microvm: warm start, session ready"
WARM_EXEC = "microvm: warm start to first exec"
ROUND_TRIP = "microvm: true round trip"
FILE_TRIP = "microvm: 1 MiB round trip"
COLD_TARGET_RATIO = 1.5
WARM_TARGET_MS = 10.0
TRUE = ["true"]
MIB = os.urandom(1024 * 1024)


def summarize(samples: list[float]) -> dict[str, float]:
    """p50, p99, min and max of ``samples`` (seconds) in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    p99 = statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0]
    return {"p50": statistics.median(ms), "p99": p99, "min": ms[0], "max": ms[-1], "runs": len(ms)}


def microvm_config(state_dir: str, image: str | None, pool: int) -> GolemConfig:
    """The microvm backend alone, ``pool`` warm boxes per shape (0: every box cold)."""
    backend: dict[str, Any] = {"type": "microvm"}
    if image is not None:
        backend["image"] = image
    overrides = {"state_dir": state_dir, "engine": {"backend": backend, "pool": {"clean": pool}}}
    return load_config(overrides, files=[])


def timed(work: Callable[[], Awaitable[int]]) -> Case:
    async def case() -> tuple[int, float]:
        start = time.perf_counter()
        code = await work()
        return code, time.perf_counter() - start

    return case


class MicroVMCases:
    """A cold engine, a pooled one, and a live box of the former."""

    def __init__(self, cold: LocalEngine, warm: LocalEngine, box: Box) -> None:
        self.cold, self.warm, self.box = cold, warm, box
        self.ready: list[float] = []

    async def cold_start(self) -> tuple[int, float]:
        start = time.perf_counter()
        async with self.cold.session() as box:
            code = (await box.execute(TRUE)).exit_code
            elapsed = time.perf_counter() - start
        return code, elapsed

    async def warm_start(self) -> tuple[int, float]:
        """To the first answer; the session's readiness is kept in ``ready``."""
        start = time.perf_counter()
        async with self.warm.session() as box:
            self.ready.append(time.perf_counter() - start)
            code = (await box.execute(TRUE)).exit_code
            elapsed = time.perf_counter() - start
        return code, elapsed

    async def round_trip(self) -> int:
        return (await self.box.execute(TRUE)).exit_code

    async def file_trip(self) -> int:
        await self.box.put_file("bench.bin", MIB)
        return 0 if await self.box.get_file("bench.bin") == MIB else 1


async def rounds(cases: dict[str, Case], runs: int, warmup: int) -> dict[str, list[float]]:
    """Interleaved rounds of ``cases``; every one must exit 0."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + runs):
        for name, case in cases.items():
            code, elapsed = await case()
            if code != 0:
                raise RuntimeError(f"{name}: exited with {code}")
            if round_ >= warmup:
                samples[name].append(elapsed)
    return samples


async def measure_microvm(
    cold: int = 10, runs: int = 100, warmup: int = 1, image: str | None = None
) -> dict[str, Any]:
    """Every case in one run: the figures by case name, the accelerator and the goals."""
    with tempfile.TemporaryDirectory(prefix="golem-bench-microvm-") as state:
        async with AsyncExitStack() as stack:
            cold_engine = await stack.enter_async_context(
                LocalEngine(microvm_config(state, image, pool=0))
            )
            warm_engine = await stack.enter_async_context(
                LocalEngine(microvm_config(state, image, pool=1))
            )
            backend = cold_engine.backend
            assert isinstance(backend, MicroVMBackend)
            settings = backend.config
            assert isinstance(settings, MicroVMBackendConfig)
            await asyncio.to_thread(backend.check)
            await warm_engine.start(prewarm=True)
            box = await stack.enter_async_context(cold_engine.session())
            cases = MicroVMCases(cold_engine, warm_engine, box)
            floor = bare_boot(settings, Path(image) if image else None)
            slow = await rounds({FLOOR: timed(floor), COLD: cases.cold_start}, cold, warmup)
            quick = await rounds(
                {
                    WARM_EXEC: cases.warm_start,
                    ROUND_TRIP: timed(cases.round_trip),
                    FILE_TRIP: timed(cases.file_trip),
                },
                runs,
                warmup,
            )
            ready = cases.ready[warmup:]
            accel = backend.accel
    samples = {**slow, WARM: ready, **quick}
    figures = {name: summarize(values) for name, values in samples.items()}
    for stats in figures.values():
        stats["x_floor"] = stats["p50"] / figures[FLOOR]["p50"]
    return {
        "accel": accel,
        "cases": figures,
        "goals": {
            f"cold start p50 <= {COLD_TARGET_RATIO}x the bare boot": (
                figures[COLD]["x_floor"] <= COLD_TARGET_RATIO
            ),
            f"warm start (session ready) p50 < {WARM_TARGET_MS:g} ms": (
                figures[WARM]["p50"] < WARM_TARGET_MS
            ),
        },
    }


def print_report(result: dict[str, Any]) -> None:
    """The figures as a plain-text table."""
    print(f"microvm, accelerator {result['accel']}; {result['machine']}")
    print(f"{'case':<40} {'p50 ms':>9} {'p99 ms':>9} {'min ms':>9} {'max ms':>9} {'runs':>5} "
          f"{'x floor':>8}")  # fmt: skip
    for name, s in result["cases"].items():
        print(f"{name:<40} {s['p50']:9.1f} {s['p99']:9.1f} {s['min']:9.1f} {s['max']:9.1f} "
              f"{s['runs']:5.0f} {s['x_floor']:8.3f}")  # fmt: skip
    for goal, met in result["goals"].items():
        print(f"goal: {goal}: {'met' if met else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=10, help="cold starts (and bare boots)")
    parser.add_argument("--runs", type=int, default=100, help="warm starts and round trips")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds before each")
    parser.add_argument("--image", help="root file system directory (default: the devbox)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    result = asyncio.run(measure_microvm(args.cold, args.runs, args.warmup, args.image))
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "loadavg_1min": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
