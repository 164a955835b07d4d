"""gVisor cases: golem's gvisor backend beside ``runsc do true``, measured in one run.

Importable (``from gvisor_cases import gvisor_cases, gvisor_targets``, bench/ on sys.path)
by a script that prints every backend; ``bench/gvisor.py`` prints them alone.

* floor ``runsc do true``: runsc with the platform and user golem chose for this host,
  ``--rootless --network=none``, running ``true`` in a new sandbox;
* golem ``cold box + true``: ``engine.execute(["true"])`` with the pool off: bundle,
  cgroups, runsc, gVisor's boot, the supervisor's hello, configure, the call, teardown;
* golem ``pooled start``: ``engine.create_session()`` taking a wiped box from the warm
  pool (its release, a wipe, is not timed);
* golem ``true in box``: ``box.execute(["true"])`` in one persistent box;
* golem ``1 MiB file round trip``: ``put_file`` then ``get_file`` of 1 MiB there.

Targets (issue 28): cold p50 <= 1.5x the ``runsc do true`` p50; pooled start p50 < 10 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.sandbox.backends.gvisor import GvisorBackend
from golem.sandbox.backends.process.launch import as_user, host_ids

RUNSC_FLOOR = "floor: runsc do true"
COLD = "golem: cold box + true"
POOLED = "golem: pooled start"
IN_BOX = "golem: true in box"
FILE_TRIP = "golem: 1 MiB file round trip"
COLD_TARGET_RATIO = 1.5
POOLED_TARGET_MS = 10.0
MIB = os.urandom(1 << 20)

TimedCase = Callable[[], Awaitable[float]]
"""A case that runs once and returns the seconds that count (its own teardown left out)."""
Stats = dict[str, float]


def summarize(samples: list[float]) -> Stats:
    """p50, p99, mean, min and max of ``samples`` (seconds) in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {
        "p50": statistics.median(ms),
        "p99": statistics.quantiles(ms, n=100, method="inclusive")[98],
        "mean": statistics.fmean(ms),
        "min": ms[0],
        "max": ms[-1],
        "runs": len(ms),
    }


async def measure_timed(cases: dict[str, TimedCase], runs: int, warmup: int) -> dict[str, Stats]:
    """Interleaved rounds of every case, after ``warmup`` untimed ones."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + runs):
        for name, case in cases.items():
            elapsed = await case()
            if round_ >= warmup:
                samples[name].append(elapsed)
    return {name: summarize(values) for name, values in samples.items()}


def runsc_floor(backend: GvisorBackend) -> TimedCase:
    """``runsc do true`` as golem would run it (platform, rootless, as ``run_as``)."""
    host = backend.host()
    ids = host_ids(backend.config.run_as)
    prefix = (as_user(ids) or []) if ids else []

    async def case() -> float:
        with tempfile.TemporaryDirectory(prefix="golem-bench-runsc-") as root:
            os.chmod(root, 0o777)  # noqa: S103 - runsc's state, for the run_as user
            argv = [*prefix, host.runsc, "--rootless", "--network=none"]
            argv += [f"--platform={host.platform}", "--root", root, "do", "true"]
            start = time.perf_counter()
            done = subprocess.run(argv, check=False, capture_output=True, cwd="/")  # noqa: ASYNC221
            elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"runsc do true failed: {done.stderr.decode()[-300:]}")
        return elapsed

    return case


def _timed(call: Callable[[], Awaitable[int]]) -> TimedCase:
    async def case() -> float:
        start = time.perf_counter()
        code = await call()
        elapsed = time.perf_counter() - start
        if code != 0:
            raise RuntimeError(f"the call exited with {code}")
        return elapsed

    return case


async def gvisor_cases(state_dir: str, runs: int, warmup: int) -> dict[str, Stats]:
    """Every gVisor case, interleaved; golem's default box spec (cgroups, seccomp)."""
    backend = {"type": "gvisor"}
    config = load_config(
        {"state_dir": state_dir, "engine": {"backend": backend, "pool": {"clean": 1}}},
        files=[],
    )
    cold = load_config(
        {"state_dir": state_dir, "engine": {"backend": backend, "pool": {"clean": 0}}},
        files=[],
    )
    async with (
        LocalEngine(config) as engine,
        LocalEngine(cold) as cold_engine,
        cold_engine.session() as box,
    ):
        assert isinstance(engine.backend, GvisorBackend)
        await engine.start(prewarm=True)

        async def cold_box() -> int:
            return (await cold_engine.execute(["true"])).exit_code

        async def pooled_start() -> float:
            start = time.perf_counter()
            session = await engine.create_session()
            elapsed = time.perf_counter() - start
            await engine.remove_session(session.id)  # a wipe back into the pool: not timed
            return elapsed

        async def in_box() -> int:
            return (await box.execute(["true"])).exit_code

        async def file_trip() -> int:
            await box.put_file("/tmp/bench.bin", MIB)
            return 0 if await box.get_file("/tmp/bench.bin") == MIB else 1

        cases: dict[str, TimedCase] = {
            RUNSC_FLOOR: runsc_floor(engine.backend),
            COLD: _timed(cold_box),
            POOLED: pooled_start,
            IN_BOX: _timed(in_box),
            FILE_TRIP: _timed(file_trip),
        }
        return await measure_timed(cases, runs, warmup)


def gvisor_targets(cases: dict[str, Stats]) -> dict[str, Any]:
    """The issue's gVisor targets against the figures of the same run."""
    cold = cases[COLD]["p50"] / cases[RUNSC_FLOOR]["p50"]
    pooled = cases[POOLED]["p50"]
    return {
        "cold_over_runsc_do_true_p50": {
            "value": cold, "target": COLD_TARGET_RATIO, "met": cold <= COLD_TARGET_RATIO,
        },
        "pooled_start_p50_ms": {
            "value": pooled, "target": POOLED_TARGET_MS, "met": pooled < POOLED_TARGET_MS,
        },
    }  # fmt: skip
