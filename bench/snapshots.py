"""Starting a box from a snapshot against starting an empty one, on one backend.

    .venv/bin/python bench/snapshots.py [--backend process|docker] [--runs N] [--files F] [--json]

A source box makes a venv in golem's home (``/tmp/golem/venv``) and ``F`` small source files
in ``/workspace`` (4 KiB each), and is frozen as a snapshot. Then, interleaved for ``N``
rounds (after one warm-up), each case runs ``true`` in a session of its own and ends it;
the time counted is from asking for the session to ``true``'s result (its end, a wipe
back into the pool, is the same in every case and not counted):

* ``empty box``: a session from the warm pool (a wiped box of the same shape);
* ``box from snapshot``: the same, with ``snapshot = "bench"``, on an engine keeping no
  warm boxes from snapshots (``engine.pool.snapshot_boxes = 0``): the pooled box's
  supervisor unpacks the snapshot's trees into its tmpfs before the call;
* ``warm box from snapshot``: the same on the engine's defaults: a warm box with the
  snapshot unpacked already, the next one filled in the background (awaited outside the
  timing, as a run arriving later than the fill finds it);
* ``take snapshot``: ``engine.snapshot`` of the source box (the check and the archive).

Goal (issue 32): a warm snapshot start within 2x a pooled empty box of the same backend.
The copy costs in proportion to the snapshot (``--files`` shows how); a warm box does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from golem.core import load_config
from golem.sandbox import LocalEngine
from latency import summarize  # bench/ is on sys.path

TARGET_RATIO = 2.0


def prepare(files: int) -> str:
    return (
        "set -e; python3 -m venv --without-pip /tmp/golem/venv; mkdir -p src; "
        f"for i in $(seq {files}); do head -c 4096 /dev/urandom > src/f$i; done"
    )


async def timed(case: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await case()
    return time.perf_counter() - start


async def started(engine: LocalEngine, spec: dict[str, Any]) -> float:
    """Seconds from asking for a session to its first call's result (``true``); its
    end (the wipe back into the pool) is not counted."""
    start = time.perf_counter()
    async with engine.session(spec) as box:
        await box.execute(["true"])
        return time.perf_counter() - start


async def measure(backend: str, runs: int, files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="golem-bench-snapshots-") as state:
        Path(state).chmod(0o755)  # boxes' host user binds a kept tree from it (process)
        settings: dict[str, Any] = {"state_dir": state}
        if backend == "docker":
            settings["engine"] = {"backend": {"type": "docker"}}
        config = load_config(settings, files=[])
        engine = LocalEngine(config)
        pool = config.engine.pool.model_copy(update={"snapshot_boxes": 0})
        copying = LocalEngine(
            config.model_copy(update={"engine": config.engine.model_copy(update={"pool": pool})})
        )
        async with engine, copying, engine.session() as source:
            await engine.start()  # long-lived, as a server's: it refills warm boxes
            done = await source.execute(prepare(files))
            assert done.exit_code == 0, done.stderr_text
            info = await engine.snapshot(source.id, "bench")
            cases: dict[str, Callable[[], Awaitable[float]]] = {
                "empty box": lambda: started(engine, {}),
                "box from snapshot": lambda: started(copying, {"snapshot": "bench"}),
                "warm box from snapshot": lambda: started(engine, {"snapshot": "bench"}),
                "take snapshot": lambda: timed(lambda: engine.snapshot(source.id, "bench")),
            }
            samples: dict[str, list[float]] = {name: [] for name in cases}
            for round_ in range(runs + 1):
                for name, case in cases.items():
                    took = await case()
                    await engine.warm.settled()
                    if round_:  # the first round warms the pools
                        samples[name].append(took)
    stats = {name: summarize(values) for name, values in samples.items()}
    ratio = stats["warm box from snapshot"]["p50"] / stats["empty box"]["p50"]
    return {
        "backend": backend,
        "snapshot": {"size": info.size, "entries": info.entries},
        "cases": stats,
        "ratio": ratio,
        "copy_ratio": stats["box from snapshot"]["p50"] / stats["empty box"]["p50"],
        "met": ratio <= TARGET_RATIO,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["process", "docker"], default="process")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure(args.backend, args.runs, args.files))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    size = result["snapshot"]
    print(f"{args.backend}: snapshot of {size['entries']} entries, {size['size']} bytes")
    for name, stats in result["cases"].items():
        print(f"  {name:<24} p50 {stats['p50']:8.2f} ms   p99 {stats['p99']:8.2f} ms")
    verdict = "met" if result["met"] else "NOT met"
    print(f"  box from snapshot (a copy) / empty box: {result['copy_ratio']:.2f}x")
    print(f"  warm box from snapshot / empty box: {result['ratio']:.2f}x (goal <= 2x: {verdict})")


if __name__ == "__main__":
    main()
