"""Latency of golem's sandbox against its floors, measured in one run on this machine.

    .venv/bin/python bench/sandbox.py [--runs N] [--warmup W] [--json]

Cases, timed with time.perf_counter; after ``W`` warm-up rounds, ``N`` rounds each run every
case once, interleaved, so that load from elsewhere on the machine hits all cases alike:

* floor ``subprocess true``: ``subprocess.run(["true"])``, the cost of any child process;
* floor ``bwrap true``: bare bubblewrap (all namespaces, /usr read-only) running ``true``,
  as the current user (when that is root, golem itself runs bubblewrap as ``run_as``);
* floor ``subprocess python3``: ``python3 -c pass``, python3 found on the box's PATH (the
  interpreter calls in the box get, not whatever shim the host's PATH has first);
* golem ``new box + true``: ``engine.execute(["true"])`` with the default warm pool: a
  wiped box of the same shape is configured, runs the call, and is wiped again on release;
* golem ``new box + true (cold)``: the same with the pool off (``pool.clean = 0``): box
  record, cgroups, seccomp, bubblewrap, supervisor start-up, hello, configure, the call
  and the teardown;
* golem ``true in box``: ``box.execute(["true"])`` in one long-lived box;
* golem ``python3 -c pass in box``: the same with ``python3 -c pass``.

Targets: persistent p50 - subprocess p50 <= 2 ms; new box p50 / bwrap p50 <= 1.5.
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
from typing import Any

import golem
from docker_cases import docker_cases, docker_targets  # bench/ is on sys.path
from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.sandbox.backends.process.bwrap import BOX_PATH

MIN_RUNS = 200
TRUE = ["true"]
PYTHON = ["python3", "-c", "pass"]
BWRAP = [
    "bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "true",
]  # fmt: skip
SUBPROCESS = "floor: subprocess true"
BWRAP_FLOOR = "floor: bwrap true"
PYTHON_FLOOR = "floor: subprocess python3 -c pass"
NEW_BOX = "golem: new box + true"
COLD_BOX = "golem: new box + true (cold)"
IN_BOX = "golem: true in box"
PYTHON_IN_BOX = "golem: python3 -c pass in box"
PERSISTENT_TARGET_MS = 2.0
NEW_BOX_TARGET_RATIO = 1.5

Case = Callable[[], Awaitable[int]]
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


def floor(argv: list[str]) -> Case:
    """A case that runs ``argv`` bare, blocking on purpose (no event loop, no thread hop)."""

    async def case() -> int:
        return subprocess.run(argv, check=False, stdin=subprocess.DEVNULL).returncode  # noqa: ASYNC221

    return case


async def measure(cases: dict[str, Case], runs: int, warmup: int) -> dict[str, Stats]:
    """Interleaved rounds of every case; every call must exit 0."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + runs):
        for name, case in cases.items():
            start = time.perf_counter()
            code = await case()
            elapsed = time.perf_counter() - start
            if code != 0:
                raise RuntimeError(f"{name}: the call exited with {code}")
            if round_ >= warmup:
                samples[name].append(elapsed)
    return {name: summarize(values) for name, values in samples.items()}


async def all_cases(state_dir: str, runs: int, warmup: int) -> dict[str, Stats]:
    """Floors and golem cases; golem uses the default box spec (cgroups, seccomp on)."""
    host_python = [shutil.which("python3", path=BOX_PATH) or "python3", *PYTHON[1:]]
    config = load_config({"state_dir": state_dir}, files=[])
    cold = load_config({"state_dir": state_dir, "engine": {"pool": {"clean": 0}}}, files=[])
    async with (
        LocalEngine(config) as engine,
        LocalEngine(cold) as cold_engine,
        engine.session() as box,
    ):

        async def new_box() -> int:
            return (await engine.execute(TRUE)).exit_code

        async def cold_box() -> int:
            return (await cold_engine.execute(TRUE)).exit_code

        async def in_box() -> int:
            return (await box.execute(TRUE)).exit_code

        async def python_in_box() -> int:
            return (await box.execute(PYTHON)).exit_code

        cases: dict[str, Case] = {
            SUBPROCESS: floor(TRUE),
            BWRAP_FLOOR: floor(BWRAP),
            PYTHON_FLOOR: floor(host_python),
            NEW_BOX: new_box,
            COLD_BOX: cold_box,
            IN_BOX: in_box,
            PYTHON_IN_BOX: python_in_box,
        }
        return await measure(cases, runs, warmup)


def run_all(runs: int, warmup: int, docker_image: str | None) -> dict[str, Any]:
    """Every case, and the differences and ratios against the targets."""
    load_before = os.getloadavg()[0]
    docker_report = None
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        cases = asyncio.run(all_cases(state_dir, runs, warmup))
        if docker_image is not None:
            measured = asyncio.run(docker_cases(state_dir, docker_image, measure, runs, warmup))
            docker_report = {"image": docker_image, "cases": measured}
            docker_report["targets"] = docker_targets(measured)
    overhead = cases[IN_BOX]["p50"] - cases[SUBPROCESS]["p50"]
    ratio = cases[NEW_BOX]["p50"] / cases[BWRAP_FLOOR]["p50"]
    python_overhead = cases[PYTHON_IN_BOX]["p50"] - cases[PYTHON_FLOOR]["p50"]
    cold_ratio = cases[COLD_BOX]["p50"] / cases[BWRAP_FLOOR]["p50"]
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "uid": os.geteuid(),
            "loadavg_1min": [load_before, os.getloadavg()[0]],
            "golem": os.path.dirname(golem.__file__),
        },
        "runs": runs,
        "warmup": warmup,
        "cases": cases,
        "targets": {
            "persistent_true_minus_subprocess_p50_ms": {
                "value": overhead,
                "target": PERSISTENT_TARGET_MS,
                "met": overhead <= PERSISTENT_TARGET_MS,
            },
            "new_box_over_bwrap_p50": {
                "value": ratio,
                "target": NEW_BOX_TARGET_RATIO,
                "met": ratio <= NEW_BOX_TARGET_RATIO,
            },
        },
        "persistent_python_minus_bare_python_p50_ms": python_overhead,
        "cold_box_over_bwrap_p50": cold_ratio,
        "docker": docker_report,
    }


def print_table(report: dict[str, Any]) -> None:
    """The figures as a plain-text table."""
    machine = report["machine"]
    load = " -> ".join(f"{value:.2f}" for value in machine["loadavg_1min"])
    print(f"golem sandbox benchmark ({machine['golem']})")
    print(
        f"{report['runs']} interleaved rounds ({report['warmup']} warm-up), {machine['cpus']} "
        f"CPUs, Python {machine['python']}, uid {machine['uid']}, load average {load}"
    )
    print_cases(report["cases"])
    over = report["targets"]["persistent_true_minus_subprocess_p50_ms"]
    new = report["targets"]["new_box_over_bwrap_p50"]
    print()
    print(
        f"true in box p50 - subprocess p50:   {over['value']:+6.2f} ms "
        f"(target <= {over['target']} ms: {'met' if over['met'] else 'NOT met'})"
    )
    print(
        f"new box p50 / bare bwrap p50:       {new['value']:6.2f}x "
        f"(target <= {new['target']}x: {'met' if new['met'] else 'NOT met'})"
    )
    print(f"cold new box p50 / bare bwrap p50:  {report['cold_box_over_bwrap_p50']:6.2f}x")
    python_overhead = report["persistent_python_minus_bare_python_p50_ms"]
    print(f"python3 in box p50 - bare p50:      {python_overhead:+6.2f} ms")
    if machine["uid"] == 0:
        print("note: the bwrap floor runs as root; golem runs bubblewrap as its run_as user")
    if report["docker"] is not None:
        print(f"\ndocker backend, image {report['docker']['image']}")
        print_cases(report["docker"]["cases"])
        print()
        for name, target in report["docker"]["targets"].items():
            verdict = "met" if target["met"] else "NOT met"
            print(f"{name}: {target['value']:.3f} (target <= {target['target']:.2f}: {verdict})")


def print_cases(cases: dict[str, Stats]) -> None:
    """One row per case."""
    width = max(len(name) for name in cases)
    print(f"{'case':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}  {'min ms':>8}")
    for name, s in cases.items():
        figures = "  ".join(f"{s[key]:8.2f}" for key in ("p50", "p99", "mean", "min"))
        print(f"{name:<{width}}  {figures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=MIN_RUNS, help="timed rounds (>= 200)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed rounds first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--docker-image", default="golem/devbox:latest", help="image for the docker cases"
    )
    parser.add_argument("--no-docker", action="store_true", help="skip the docker cases")
    args = parser.parse_args()
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}, for a meaningful p99")
    if shutil.which("bwrap") is None:
        parser.error("bubblewrap (bwrap) is not installed")
    report = run_all(args.runs, args.warmup, None if args.no_docker else args.docker_image)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
