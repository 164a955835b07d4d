"""Every backend of the isolation ladder against its floor, measured in one run on this host.

    .venv/bin/python bench/isolation.py [--runs N] [--warmup W] [--backend NAME ...] [--json]

Per backend (``golem.sandbox.probe.candidates``: process, docker, podman, gvisor,
docker+runsc, podman+runsc, microvm), with the backend's default box spec:

* ``cold start``: a box started with no warm pool and its first call (``true``) answered;
* ``pooled ready``: a box handed out by the warm pool (wiped since its last session), ready
  for its first call (the goal's "a pooled box starts");
* ``warm start``: the same and its first call answered;
* ``true round trip``: ``box.execute(["true"])`` in one live box;
* ``1 MiB round trip``: 1 MiB written into that box and read back.

Floors, in the same run: ``true`` (a bare process), ``bwrap true`` (bare bubblewrap),
``runsc do true`` (bare gVisor, run the way golem runs runsc: the platform golem chose for
this host, ``--rootless --network=none``, as ``run_as``), ``qemu boot to echo`` (the bare
boot of the microVM's kernel and root disk to a guest echo). Each backend's figures are also
given as a ratio to their raw floor (``x floor``): a start to its tier's floor (``bwrap
true``, ``runsc do true``, the bare boot), a ``true`` round trip to a bare ``true``. Each
backend's isolation is printed as its box reports it (for gVisor: the platform and runsc's
flags). A backend or floor this host lacks is reported absent with why. Goals (issue 28): a
pooled box of every tier starts in under 10 ms; a cold gvisor box within 1.5x ``runsc do
true``; a cold microvm within 1.5x the bare boot.

The microVM's floor is its backend's own (``golem.sandbox.backends.microvm.bench.bare_boot``:
the same QEMU command line, kernel, VM size, user and root disk as a default box). Rounds
are interleaved, so load from elsewhere hits every case alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

from golem.core import GvisorBackendConfig, load_config
from golem.core.errors import BackendUnavailable, ConfigError, GolemError
from golem.sandbox import Box, LocalEngine
from golem.sandbox.backends.gvisor import GvisorBackend
from golem.sandbox.backends.microvm.bench import bare_boot
from golem.sandbox.backends.process.launch import as_user, host_ids
from golem.sandbox.probe import alone, backend_config, candidates

Case = Callable[[], Awaitable[tuple[int, float]]]
"""A case runs once: its exit code (0: it worked) and the seconds it took (what it times
itself: a start leaves its box's teardown out)."""
Stats = dict[str, float]

TRUE = ["true"]
MIB = os.urandom(1024 * 1024)
BWRAP = [
    "bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "true",
]  # fmt: skip
BARE_FLOOR = "floor: true"
BWRAP_FLOOR = "floor: bwrap true"
RUNSC_FLOOR = "floor: runsc do true"
QEMU_FLOOR = "floor: qemu boot to echo"
FLOORS = (BARE_FLOOR, BWRAP_FLOOR, RUNSC_FLOOR, QEMU_FLOOR)
COLD, READY, WARM, ROUND_TRIP, FILE_TRIP = (
    "cold start",
    "pooled ready",
    "warm start",
    "true round trip",
    "1 MiB round trip",
)
POOLED_TARGET_MS = 10.0
RATIO_TARGET = 1.5
RATIO_FLOORS = {"gvisor": RUNSC_FLOOR, "microvm": QEMU_FLOOR}
"""A tier's cold start is held against this floor (its goal: within 1.5x)."""
START_FLOORS = {"container": BWRAP_FLOOR, **RATIO_FLOORS}
"""The raw floor of a start of each tier (``x floor``)."""


def summarize(samples: list[float]) -> Stats:
    """p50, p99, min and max of ``samples`` (seconds) in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    p99 = statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0]
    return {"p50": statistics.median(ms), "p99": p99, "min": ms[0], "max": ms[-1], "runs": len(ms)}


def command(argv: list[str]) -> Case:
    """A case running ``argv`` bare, blocking on purpose (no event loop, no thread hop)."""

    async def case() -> tuple[int, float]:
        start = time.perf_counter()
        done = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL)  # noqa: ASYNC221
        return done.returncode, time.perf_counter() - start

    return case


def timed(work: Callable[[], Awaitable[int]]) -> Case:
    """A case timing all of ``work``."""

    async def case() -> tuple[int, float]:
        start = time.perf_counter()
        code = await work()
        return code, time.perf_counter() - start

    return case


def runsc_do_true(backend: GvisorBackend) -> Case:
    """``runsc do true`` as golem runs runsc: its platform for this host, rootless, no
    network, as ``run_as``, a fresh state directory each time."""
    host = backend.host()
    ids = host_ids(backend.config.run_as)
    prefix = (as_user(ids) or []) if ids else []

    async def case() -> tuple[int, float]:
        with tempfile.TemporaryDirectory(prefix="golem-bench-runsc-") as root:
            os.chmod(root, 0o777)  # noqa: S103 - runsc's state, for the run_as user
            argv = [*prefix, host.runsc, "--rootless", "--network=none"]
            argv += [f"--platform={host.platform}", "--root", root, "do", "true"]
            start = time.perf_counter()
            done = subprocess.run(argv, check=False, capture_output=True, cwd="/")  # noqa: ASYNC221
            return done.returncode, time.perf_counter() - start

    return case


async def floor_case(name: str) -> Case:
    """A floor's case; BackendUnavailable when this host cannot run it."""
    if name == RUNSC_FLOOR:
        backend = GvisorBackend(GvisorBackendConfig())
        await asyncio.to_thread(backend.check)  # the platform, tried in a sandbox
        return runsc_do_true(backend)
    if name == QEMU_FLOOR:
        return timed(bare_boot())
    argv = {BARE_FLOOR: TRUE, BWRAP_FLOOR: BWRAP}[name]
    if shutil.which(argv[0]) is None:
        raise BackendUnavailable(f"{argv[0]} is not on this host")
    return command(argv)


class BackendCases:
    """One backend's cases: a cold engine, a pooled one, and a live box of the latter."""

    def __init__(self, cold: LocalEngine, warm: LocalEngine, box: Box) -> None:
        self.cold, self.warm, self.box = cold, warm, box

    @staticmethod
    async def _start(engine: LocalEngine) -> tuple[int, float]:
        """A box of ``engine`` started and its first call answered; its end not timed."""
        start = time.perf_counter()
        async with engine.session() as box:
            code = (await box.execute(TRUE)).exit_code
            elapsed = time.perf_counter() - start
        return code, elapsed

    async def cold_start(self) -> tuple[int, float]:
        return await self._start(self.cold)

    async def warm_start(self) -> tuple[int, float]:
        return await self._start(self.warm)

    async def pooled_ready(self) -> tuple[int, float]:
        """A box of the warm pool handed out, ready for a call (none made)."""
        start = time.perf_counter()
        async with self.warm.session() as box:
            elapsed = time.perf_counter() - start
            code = 0 if box.id else 1
        return code, elapsed

    async def round_trip(self) -> int:
        return (await self.box.execute(TRUE)).exit_code

    async def file_trip(self) -> int:
        await self.box.put_file("bench.bin", MIB)
        return 0 if await self.box.get_file("bench.bin") == MIB else 1

    def cases(self, name: str) -> dict[str, Case]:
        return {
            f"{name}: {COLD}": self.cold_start,
            f"{name}: {READY}": self.pooled_ready,
            f"{name}: {WARM}": self.warm_start,
            f"{name}: {ROUND_TRIP}": timed(self.round_trip),
            f"{name}: {FILE_TRIP}": timed(self.file_trip),
        }


async def open_backend(stack: AsyncExitStack, name: str, state_dir: str) -> BackendCases:
    """The cases of backend ``name``; GolemError when it cannot run here."""
    base = load_config({"state_dir": state_dir}, files=[])
    candidate = next(c for c in candidates(base) if c.name == name)
    backend = backend_config(candidate)
    cold = await stack.enter_async_context(LocalEngine(alone(base, backend)))
    warm = await stack.enter_async_context(LocalEngine(alone(base, backend, pooled=1)))
    await asyncio.to_thread(cold.backend.check)
    await warm.start(prewarm=True)
    box = await stack.enter_async_context(cold.session())
    tier = box.isolation.tier if box.isolation is not None else "container"
    kernel = (await box.execute(["uname", "-r"])).stdout_text.strip()
    if tier != "container" and kernel == os.uname().release:
        raise BackendUnavailable(f"claims the {tier} tier, but its box runs the host's kernel")
    return BackendCases(cold, warm, box)


async def measure(cases: dict[str, Case], runs: int, warmup: int) -> dict[str, Stats]:
    """Interleaved rounds of every case; every call must exit 0."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + runs):
        for name, case in cases.items():
            code, elapsed = await case()
            if code != 0:
                raise RuntimeError(f"{name}: exited with {code}")
            if round_ >= warmup:
                samples[name].append(elapsed)
    return {name: summarize(values) for name, values in samples.items()}


async def run_all(names: list[str], runs: int, warmup: int, state_dir: str) -> dict[str, Any]:
    """Every present backend and floor in one interleaved run; the absent with why."""
    absent: dict[str, str] = {}
    cases: dict[str, Case] = {}
    tiers: dict[str, str] = {}
    isolation: dict[str, dict[str, Any]] = {}
    for floor in FLOORS:
        try:
            cases[floor] = await floor_case(floor)
        except GolemError as exc:
            absent[floor] = exc.message
    async with AsyncExitStack() as stack:
        for name in names:
            try:
                opened = await open_backend(stack, name, state_dir)
            except (GolemError, ConfigError) as exc:
                absent[name] = exc.message
                continue
            got = opened.box.isolation
            tiers[name] = got.tier if got is not None else "container"
            if got is not None:
                isolation[name] = {"said": str(got), **got.model_dump(exclude_defaults=True)}
            cases.update(opened.cases(name))
        measured = await measure(cases, runs, warmup)
    return {
        "cases": measured,
        "ratios": ratios(measured, tiers),
        "absent": absent,
        "tiers": tiers,
        "isolation": isolation,
        "targets": targets(measured, tiers),
    }


def ratios(measured: dict[str, Stats], tiers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each backend's p50 over its raw floor's (``x floor``): a start over its tier's
    floor, a ``true`` round trip over a bare ``true``."""
    found: dict[str, dict[str, Any]] = {}
    for name, tier in tiers.items():
        floors = {COLD: START_FLOORS.get(tier), WARM: START_FLOORS.get(tier)}
        floors[ROUND_TRIP] = BARE_FLOOR
        for case, floor in floors.items():
            if floor is not None and floor in measured:
                value = measured[f"{name}: {case}"]["p50"] / measured[floor]["p50"]
                found[f"{name}: {case}"] = {"floor": floor, "ratio": value}
    return found


def targets(measured: dict[str, Stats], tiers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The issue's goals, for each backend measured."""
    found: dict[str, dict[str, Any]] = {}
    for name, tier in tiers.items():
        ready = measured[f"{name}: {READY}"]["p50"]
        found[f"{name}: pooled ready p50 (ms)"] = _goal(ready, POOLED_TARGET_MS)
        floor = RATIO_FLOORS.get(tier)
        if floor is not None and floor in measured:
            ratio = measured[f"{name}: {COLD}"]["p50"] / measured[floor]["p50"]
            found[f"{name}: cold start / {floor}"] = _goal(ratio, RATIO_TARGET)
    return found


def _goal(value: float, target: float) -> dict[str, Any]:
    return {"value": value, "target": target, "met": value <= target}


def print_report(report: dict[str, Any]) -> None:
    """The figures as a plain-text table."""
    machine = report["machine"]
    print(f"golem isolation benchmark: {machine['cpus']} CPUs, Python {machine['python']}")
    for name, got in report["isolation"].items():
        flags = f" (runsc {' '.join(got['flags'])})" if got.get("flags") else ""
        print(f"  {name}: {got['said']}{flags}")
    print()
    print(f"{'case':<44} {'p50 ms':>9} {'p99 ms':>9} {'x floor':>8} {'runs':>5}")
    for name, stats in report["cases"].items():
        ratio = report["ratios"].get(name)
        times = f"{ratio['ratio']:7.2f}x" if ratio else f"{'':>8}"
        figures = f"{stats['p50']:9.2f} {stats['p99']:9.2f} {times} {stats['runs']:5.0f}"
        print(f"{name:<44} {figures}")
    print()
    for name, goal in report["targets"].items():
        state = "met" if goal["met"] else "NOT met"
        print(f"{name:<52} {goal['value']:8.2f} (goal <= {goal['target']:g}: {state})")
    for name, why in report["absent"].items():
        print(f"absent: {name}: {why}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--backend", action="append", help="Only these backends (repeatable).")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        known = [c.name for c in candidates(load_config({"state_dir": state_dir}, files=[]))]
        names = options.backend or known
        report = asyncio.run(run_all(names, options.runs, options.warmup, state_dir))
    report["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    report["runs"], report["warmup"] = options.runs, options.warmup
    if options.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)


if __name__ == "__main__":
    main()
