"""How soon a waiter learns of a change another store made: a cancel request reaching a
runner, by notification (today) beside the polling it replaced (a read every 0.25 s, the
old cancel watcher and gates), measured in one run on each SQL store.

    .venv/bin/python bench/store_wake.py [--wakes 200] [--polls 40] [--postgres URL] [--json]

Two stores on one database (two connection pools, as two processes have; on SQLite the
second is woken through its datagram socket, on PostgreSQL through LISTEN/NOTIFY): one
requests a cancel, the other waits for it, timed with perf_counter from just before the
request to the waiter seeing ``cancel_requested``. Also the reads each way costs while
nothing changes: polling reads 4 times a second per waiter, a notified waiter reads once
per ``RECHECK`` (30 s).

Target: the notified wake p50 is below the polling floor's p50 (the poll's half period).
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

from golem.store import SqlStore, control_key
from golem.store.records import RunRecord

OLD_POLL = 0.25


def _record(run_id: str) -> RunRecord:
    now = time.time()
    return RunRecord(
        id=run_id, tenant="", status="running", created=now, updated=now, document="{}"
    )


async def _notified(runner: SqlStore, person: SqlStore, run_id: str) -> float:
    with runner.watch(control_key(run_id)) as asked:
        asked.clear()
        started = time.perf_counter()
        await person.runs.request_cancel(run_id)
        while True:
            current = await runner.runs.load(run_id)
            if current is not None and current.cancel_requested:
                return time.perf_counter() - started
            await asked.wait()
            asked.clear()


async def _polled(runner: SqlStore, person: SqlStore, run_id: str) -> float:
    async def request() -> float:
        await asyncio.sleep(OLD_POLL * (hash(run_id) % 100) / 100)  # anywhere in a period
        started = time.perf_counter()
        await person.runs.request_cancel(run_id)
        return started

    requested = asyncio.ensure_future(request())
    while True:
        current = await runner.runs.load(run_id)
        if current is not None and current.cancel_requested:
            return time.perf_counter() - await requested
        await asyncio.sleep(OLD_POLL)


def _stats(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {"p50_ms": statistics.median(ms), "p99_ms": ms[int(len(ms) * 0.99) - 1 or 0],
            "n": len(ms)}  # fmt: skip


async def measure(url: str, wakes: int, polls: int) -> dict[str, Any]:
    runner, person = await SqlStore.connect(url), await SqlStore.connect(url)
    try:
        notified, polled = [], []
        for index in range(wakes):
            await runner.runs.create(_record(f"run-n{index}"))
            notified.append(await _notified(runner, person, f"run-n{index}"))
        for index in range(polls):
            await runner.runs.create(_record(f"run-p{index}"))
            polled.append(await _polled(runner, person, f"run-p{index}"))
    finally:
        await runner.close()
        await person.close()
    result = {"notified": _stats(notified), "polled": _stats(polled)}
    result["ratio_p50"] = result["polled"]["p50_ms"] / result["notified"]["p50_ms"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--polls", type=int, default=40)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL to measure too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        sqlite = f"sqlite:///{Path(scratch) / 'golem.db'}"
        results["sqlite"] = asyncio.run(measure(sqlite, args.wakes, args.polls))
    if args.postgres:
        results["postgresql"] = asyncio.run(measure(args.postgres, args.wakes, args.polls))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, result in results.items():
        for way in ("notified", "polled"):
            r = result[way]
            print(f"{name:<11} {way:<9} p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms"
                  f"  (n={r['n']})")  # fmt: skip
        print(f"{name:<11} polling p50 / notified p50: {result['ratio_p50']:.1f}x")
        met = result["notified"]["p50_ms"] < result["polled"]["p50_ms"]
        print(f"{name:<11} target (notified p50 below polling p50): {'met' if met else 'MISSED'}")


if __name__ == "__main__":
    main()
