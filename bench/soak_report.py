"""What bench/soak.py records of its load (Tally: every call, its outcome and latency)
and how it reports it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from soak_probe import METRICS, trend_per_hour  # bench/ is on sys.path

FINISHED = {"succeeded", "failed", "cancelled", "escalated", "rejected"}


@dataclass
class Tally:
    """Every call of the load: its kind, outcome and latency."""

    calls: Counter[str] = field(default_factory=Counter)
    errors: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # kind, what, phase
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    phase: str = "load"
    runs: list[str] = field(default_factory=list)
    sessions_made: int = 0
    sessions_deleted: int = 0
    examples: dict[tuple[str, str], str] = field(default_factory=dict)

    async def call(self, kind: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call``, timed and counted; its error counted (kind, status or exception)."""
        self.calls[kind] += 1
        phase = self.phase
        started = time.perf_counter()
        try:
            result = await call()
        except httpx.HTTPStatusError as exc:
            what = str(exc.response.status_code)
            with contextlib.suppress(httpx.ResponseNotRead):
                self.examples.setdefault((kind, what), exc.response.text[:300])
        except Exception as exc:  # the soak counts every failure
            what = type(exc).__name__
            self.examples.setdefault((kind, what), str(exc)[:300])
        else:
            self.latencies[kind].append(time.perf_counter() - started)
            return result
        self.errors[(kind, what, phase)] += 1
        return None


# The report ----------------------------------------------------------------------------


def _percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summarize(found: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    tally: Tally = found.pop("tally")
    samples: list[dict[str, Any]] = found.pop("samples")
    steady = [s for s in samples if s["phase"] == "steady"]
    metrics = {}
    for metric in METRICS:
        warm = next((s[metric] for s in steady if s[metric] is not None), None)
        end = samples[-1][metric]
        metrics[metric] = {
            "after_warm_up": warm,
            "end": end,
            "ratio": end / warm if warm and end is not None else None,
            "trend_per_hour": trend_per_hour(steady, metric),
            "max": max((s[metric] for s in samples if s[metric] is not None), default=None),
        }
    runs_ended = sum(v for k, v in found["runs"].items() if k in FINISHED)
    return {
        "store": args.store,
        "minutes": args.minutes,
        "outage_s": args.outage,
        "clients": {"sessions": args.sessions, "runs": args.runs},
        **found,
        "calls": sum(tally.calls.values()),
        "calls_by_kind": dict(tally.calls),
        "errors": [
            {
                "kind": kind,
                "what": what,
                "phase": phase,
                "count": count,
                "example": tally.examples.get((kind, what), ""),
            }
            for (kind, what, phase), count in sorted(tally.errors.items())
        ],
        "latency_ms": {
            kind: {"p50": statistics.median(v) * 1000, "p99": _percentile(v, 99) * 1000}
            for kind, v in sorted(tally.latencies.items())
            if v
        },
        "lost": {
            "runs_not_ended": len(tally.runs) - runs_ended,
            "sessions_not_deleted": tally.sessions_made - tally.sessions_deleted,
        },
        "metrics": metrics,
        "samples": [
            {
                "s": round(x["t"] - samples[0]["t"]),
                "phase": x["phase"],
                **{m: None if x[m] is None else round(x[m], 2) for m in METRICS},
            }
            for x in samples
        ],
    }


def print_report(report: dict[str, Any]) -> None:
    clients = report["clients"]
    print(
        f"soak on {report['store']}: {report['minutes']} min of load ({clients['sessions']} "
        f"session clients, {clients['runs']} run clients), then {report['outage_s']} s store "
        f"outage under load; {report['seconds']:.0f} s in all, {report['calls']} calls"
    )
    print("calls: " + ", ".join(f"{k} {v}" for k, v in report["calls_by_kind"].items()))
    print("latency ms (p50/p99): " + ", ".join(
        f"{k} {v['p50']:.0f}/{v['p99']:.0f}" for k, v in report["latency_ms"].items()
    ))  # fmt: skip
    print(f"errors: {sum(e['count'] for e in report['errors'])}")
    for error in report["errors"]:
        print(f"  {error['count']:5d}  {error['kind']}: {error['what']} ({error['phase']})"
              f"  {error['example'][:160]!r}")  # fmt: skip
    lost, sessions = report["lost"], report["sessions"]
    print(
        f"runs: {report['runs']}; not ended {lost['runs_not_ended']}; running/queued at the "
        f"end {report['runs_active_listed']}"
    )
    for reason, count in report.get("failed_because", {}).items():
        print(f"  {count:5d}  failed: {reason!r}")
    print(
        f"sessions: made {sessions['made']}, deleted {sessions['deleted']}, listed at the end "
        f"{sessions['listed_at_end']}"
    )
    print(f"{'metric':<14}{'warm':>10}{'end':>10}{'end/warm':>10}{'max':>10}{'trend/h':>10}")
    for name, m in report["metrics"].items():
        cells = [m["after_warm_up"], m["end"], m["ratio"], m["max"], m["trend_per_hour"]]
        print(f"{name:<14}" + "".join(f"{c:>10.2f}" if c is not None else f"{'-':>10}"
                                      for c in cells))  # fmt: skip
    log, after = report["log"], report["after_exit"]
    print(
        f"server: exit {report['exit_code']}, shutdown failed: {log['shutdown_failed']}, "
        f"log tracebacks {log['tracebacks']}, ERROR lines {log['errors']}, WARNING lines "
        f"{log['warnings']} (exit -15: uvicorn re-raises the SIGTERM once it shut down)"
    )
    for line in log["first_errors"]:
        print(f"  {line}")
    print(
        f"after exit: boxes {after['boxes']}, cgroup dirs {after['cgroup_dirs']}; retention: "
        f"{after['run_dirs']} run directories left, {after['archives']} runs pruned (archived)"
    )


async def ended_runs(
    client: httpx.AsyncClient, runs: list[str], timeout: float
) -> tuple[Counter[str], Counter[str]]:
    """Each run's status once all ended, or at the drain's deadline; and why runs failed."""
    deadline = time.monotonic() + timeout
    while True:
        statuses: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for run_id in runs:
            response = await client.get(f"/v1/runs/{run_id}")
            run = response.json() if response.status_code == 200 else {"status": "missing"}
            statuses[run["status"]] += 1
            if run["status"] == "failed":
                reasons[str(run.get("error"))[:200]] += 1
        if set(statuses) <= FINISHED or time.monotonic() > deadline:
            return statuses, reasons
        await asyncio.sleep(2)  # polled: the bench follows no stream for runs it gave up on
