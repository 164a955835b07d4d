"""Latency of golem's gvisor backend against ``runsc do true``, measured in one run.

    .venv/bin/python bench/gvisor.py [--runs N] [--warmup W] [--json]

The cases and targets are bench/gvisor_cases.py's (which a script printing every backend
imports); this prints them alone, with the platform and flags golem chose for runsc.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from typing import Any

from golem.core import GvisorBackendConfig
from golem.sandbox.backends.gvisor import GvisorBackend
from gvisor_cases import gvisor_cases, gvisor_targets  # bench/ is on sys.path

MIN_RUNS = 20


def run_all(runs: int, warmup: int) -> dict[str, Any]:
    """Every case, the targets, and what runsc golem chose."""
    host = GvisorBackend(GvisorBackendConfig()).host()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        cases = asyncio.run(gvisor_cases(state_dir, runs, warmup))
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "uid": os.geteuid(),
            "loadavg_1min": [load_before, os.getloadavg()[0]],
        },
        "runsc": {"path": host.runsc, "version": host.version, "platform": host.platform},
        "runs": runs,
        "warmup": warmup,
        "cases": cases,
        "targets": gvisor_targets(cases),
    }


def print_table(report: dict[str, Any]) -> None:
    """The figures as a plain-text table."""
    machine, runsc = report["machine"], report["runsc"]
    load = " -> ".join(f"{value:.2f}" for value in machine["loadavg_1min"])
    print(f"golem gvisor benchmark: runsc {runsc['version']}, platform {runsc['platform']}")
    print(
        f"{report['runs']} interleaved rounds ({report['warmup']} warm-up), {machine['cpus']} "
        f"CPUs, Python {machine['python']}, uid {machine['uid']}, load average {load}"
    )
    cases = report["cases"]
    width = max(len(name) for name in cases)
    print(f"{'case':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  {'mean ms':>8}  {'min ms':>8}")
    for name, s in cases.items():
        figures = "  ".join(f"{s[key]:8.2f}" for key in ("p50", "p99", "mean", "min"))
        print(f"{name:<{width}}  {figures}")
    print()
    for name, target in report["targets"].items():
        verdict = "met" if target["met"] else "NOT met"
        print(f"{name}: {target['value']:.2f} (target {target['target']}: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help=f"timed rounds (>= {MIN_RUNS})")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}, for a meaningful p99")
    if shutil.which("runsc") is None:
        parser.error("runsc is not installed (scripts/setup installs it)")
    report = run_all(args.runs, args.warmup)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
