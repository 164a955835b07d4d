"""Whole `golem run`s, their wall time split into time in the box and golem's own overhead.

    .venv/bin/python bench/run.py [--runs N] [--cold] [--json]

Each run is the minion blueprint on examples/calculator (a bare repository, the way a forge
serves one), with the scripted model of examples/calculator-fix.yaml (it answers at once,
so model latency is not in the figures) and the local forge, through one long-lived engine
whose warm pool was filled first (``--cold``: pool off, every run starts its box).

* wall: from the request to the run's end (``Runner.start``);
* box: the time commands spent running in the box: the repository's checks (their
  durations) and the agent's tool calls (theirs);
* overhead: wall - box: clone, branch, context, copying the checkout in and out, git and
  the forge on the host, the store, events. Its floor is zero.

Target: overhead p50 <= 2 s with a warm box.

Then, in the same run, issue 32's figure on real repositories of tests/acceptance/repos/
(``--ready NAME ...``, default pyfunctions, pyextras and nodelock; ``--ready`` alone skips it): the
seconds from a run's request (its store opened, its own engine started, as the command
does) to the agent's first model call, without a prepared snapshot (dependencies and
baseline cached) and with one (after `golem prepare`); then the same from the command
line, the whole `golem run` process against a local Messages API server, beside the
provider SDK's own floor (bench/cli_ready.py, the first two repositories). Goal: under 2 s
with a prepared snapshot on the process backend. bench/devbox.py has the fuller table (by
hand, first run, a served engine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from golem.agent.events import ToolFinished
from golem.blueprint import Runner, RunRequest
from golem.blueprint.events import AgentStep, CheckFinished, NodeFinished, RunEvent
from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.store import SqlStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_ready import print_report as print_command_report
from cli_ready import report as command_report
from devbox import TARGET_PREPARED, ready_report

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGET_OVERHEAD = 2.0
IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@golem.invalid"]


def make_remote(scratch: Path) -> Path:
    """examples/calculator as a bare repository."""
    work = scratch / "seed"
    subprocess.run(["cp", "-r", str(EXAMPLES / "calculator"), str(work)], check=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "seed"]):
        subprocess.run(["git", *IDENTITY, *args], cwd=work, check=True)
    remote = scratch / "calculator.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True)
    return remote


class Timing:
    """Adds up what a run's events say about time."""

    def __init__(self) -> None:
        self.box = 0.0
        self.nodes: dict[str, float] = {}

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, CheckFinished):
            self.box += event.check.duration
        elif isinstance(event, AgentStep) and isinstance(event.event, ToolFinished):
            self.box += event.event.duration
        elif isinstance(event, NodeFinished):
            self.nodes[event.node] = event.duration


async def measure(runs: int, *, cold: bool) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="golem-bench-run-"))
    scratch.chmod(0o755)
    remote = make_remote(scratch)
    overrides: dict[str, Any] = {"state_dir": str(scratch / "state")}
    if cold:
        overrides["engine"] = {"pool": {"clean": 0}}
    config = load_config(overrides, files=[])
    store = await SqlStore.open(config)
    model = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"
    samples: list[dict[str, Any]] = []
    async with LocalEngine(config) as engine:
        await engine.start(prewarm=not cold)
        for index in range(runs + 1):  # the first is a warm-up: imports, caches
            timing = Timing()
            runner = Runner(config, engine=engine, store=store, on_event=timing)
            request = RunRequest(repo=str(remote), task="Fix the failing tests", model=model)
            started = time.perf_counter()
            state = await runner.start(request)
            wall = time.perf_counter() - started
            if state.status != "succeeded":
                raise SystemExit(f"run {index} ended {state.status}: {state.error}")
            if index:
                samples.append({"wall": wall, "box": timing.box, "nodes": timing.nodes})
    await store.close()
    return summarize(samples, cold=cold)


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = (
        statistics.quantiles(ordered, n=100, method="inclusive")[98]
        if len(ordered) > 1
        else ordered[0]
    )
    return {"p50": statistics.median(ordered), "p99": p99, "min": ordered[0]}


def summarize(samples: list[dict[str, Any]], *, cold: bool) -> dict[str, Any]:
    walls = [s["wall"] for s in samples]
    boxes = [s["box"] for s in samples]
    overheads = [s["wall"] - s["box"] for s in samples]
    nodes = {
        name: statistics.median(s["nodes"][name] for s in samples) for name in samples[0]["nodes"]
    }
    return {
        "runs": len(samples),
        "pool": "off" if cold else "warm",
        "wall_s": _stats(walls),
        "box_s": _stats(boxes),
        "overhead_s": _stats(overheads),
        "overhead_share": statistics.median(o / w for o, w in zip(overheads, walls, strict=True)),
        "node_p50_s": nodes,
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"{report['runs']} scripted minion runs, pool {report['pool']} (seconds):")
    for key in ("wall_s", "box_s", "overhead_s"):
        stats = report[key]
        print(
            f"  {key[:-2]:<9} p50 {stats['p50']:6.3f}  p99 {stats['p99']:6.3f}  "
            f"min {stats['min']:6.3f}"
        )
    overhead = report["overhead_s"]["p50"]
    verdict = "met" if overhead <= TARGET_OVERHEAD else "NOT met"
    print(
        f"  overhead is {report['overhead_share']:.0%} of the wall time "
        f"(target p50 <= {TARGET_OVERHEAD} s: {verdict})"
    )
    print("  node p50: " + ", ".join(f"{k} {v:.3f}" for k, v in report["node_p50_s"].items()))


def print_ready(report: dict[str, dict[str, Any]]) -> None:
    print(
        "Seconds from a run's request to its agent's first model call, golem imported (p50 / p99):"
    )
    print(f"  {'repository':<12}{'no prepared snapshot':>24}{'prepared snapshot':>24}")
    for name, figures in report.items():
        cells = [
            f"{figures[k]['p50']:6.3f} / {figures[k]['p99']:6.3f}"
            for k in ("unprepared_s", "prepared_s")
        ]
        print(f"  {name:<12}" + "".join(f"{cell:>24}" for cell in cells))
    if report:
        worst = max(figures["prepared_s"]["p50"] for figures in report.values())
        verdict = "met" if worst < TARGET_PREPARED else "NOT met"
        print(f"  prepared p50 < {TARGET_PREPARED} s: {verdict} (worst {worst:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cold", action="store_true", help="Turn the warm pool off.")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--ready",
        nargs="*",
        default=["pyfunctions", "pyextras", "nodelock"],
        help="Repositories of tests/acceptance/repos to time to the first model call.",
    )
    parser.add_argument("--ready-runs", type=int, default=5)
    args = parser.parse_args()
    report = asyncio.run(measure(args.runs, cold=args.cold))
    ready = ready_report(args.ready, args.ready_runs) if args.ready else {}
    command = command_report(args.ready[:2], args.ready_runs) if args.ready else {}
    if args.json:
        json.dump(
            {**report, "first_model_call": ready, "first_model_call_command": command},
            sys.stdout,
            indent=2,
        )
        print()
    else:
        print_report(report)
        print_ready(ready)
        if command:
            print_command_report(command)


if __name__ == "__main__":
    main()
