"""What streaming a check's output into the run's events costs, beside collecting it.

    .venv/bin/python bench/check_output.py [--runs N] [--lines N] [--json]

A check prints ``--lines`` short lines (100000: about 3 MB, under the box's 4 MiB output
cap) as fast as it can. Measured in the same process, alternating:

* floor ``box.execute``: the same command in a session box, its output collected whole
  (what a check did before its output became events);
* golem ``check with live output``: the command as a check of a run (a box node), from the
  host's view: from the result of the check before it (``true``, which started the box)
  to its own result, with every CheckOutput piece masked, kept in the store and shown.

What it adds is almost all the store: each piece (at most LIVE_CAP / FLUSH_BYTES of them
in a flood, then the note) is one append, as the check's result is.

Target: the check's p50 <= the floor's + 150 ms for a 3 MB flood.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from golem.blueprint import Runner, RunRequest
from golem.blueprint.events import CheckFinished, CheckOutput, RunEvent
from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.store import SqlStore
from run import make_remote  # bench/ is on sys.path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGET_OVERHEAD = 0.150
BLUEPRINT = """\
name: printing
nodes:
  - id: prepare
    kind: host
    action: prepare
    next: checks
  - id: checks
    kind: box
    run: {commands}
    next: end
"""


class CheckClock:
    """Host time from each check's result to the next one's, and the pieces shown."""

    def __init__(self) -> None:
        self.finished: list[float] = []
        self.pieces = 0

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, CheckFinished):
            self.finished.append(time.perf_counter())
        elif isinstance(event, CheckOutput):
            self.pieces += 1


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
    }


async def measure(runs: int, lines: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="golem-bench-checks-"))
    scratch.chmod(0o755)
    remote = make_remote(scratch)
    command = f"seq 1 {lines} | sed 's/^/line of the check output /'"
    blueprint = scratch / "printing.yaml"
    blueprint.write_text(BLUEPRINT.format(commands=json.dumps(["true", command])))
    config = load_config({"state_dir": str(scratch / "state")}, files=[])
    store = await SqlStore.open(config)
    floor: list[float] = []
    golem: list[float] = []
    pieces: list[int] = []
    async with LocalEngine(config) as engine, engine.session() as box:
        for _ in range(runs):
            started = time.perf_counter()
            result = await box.execute(command)
            floor.append(time.perf_counter() - started)
            assert result.ok, result.stderr_text
            clock = CheckClock()
            runner = Runner(config, engine=engine, store=store, on_event=clock)
            request = RunRequest(repo=str(remote), task="print", blueprint=str(blueprint))
            state = await runner.start(request)
            assert state.status == "succeeded", state.error
            golem.append(clock.finished[1] - clock.finished[0])
            pieces.append(clock.pieces)
    await store.close()
    floor_p50, golem_p50 = statistics.median(floor), statistics.median(golem)
    return {
        "runs": runs,
        "bytes": len(result.stdout),
        "floor: box.execute": summary(floor),
        "golem: check with live output": summary(golem),
        "pieces per check": statistics.median(pieces),
        "ratio p50": golem_p50 / floor_p50,
        "overhead p50": golem_p50 - floor_p50,
        "target overhead": TARGET_OVERHEAD,
        "met": golem_p50 - floor_p50 <= TARGET_OVERHEAD,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure(args.runs, args.lines))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['runs']} runs, {result['bytes']} bytes of output per check")
    for name in ("floor: box.execute", "golem: check with live output"):
        times = result[name]
        print(f"  {name:34} p50 {times['p50'] * 1000:8.1f} ms  p99 {times['p99'] * 1000:8.1f} ms")
    print(f"  pieces per check: {result['pieces per check']:.0f}")
    verdict = "met" if result["met"] else "NOT met"
    print(
        f"  ratio p50 {result['ratio p50']:.2f}x, overhead p50 "
        f"{result['overhead p50'] * 1000:.0f} ms (target <= {TARGET_OVERHEAD * 1000:.0f} ms): "
        f"{verdict}"
    )


if __name__ == "__main__":
    main()
