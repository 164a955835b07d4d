"""Latency figures every bench prints the same way: median and p99 over many runs."""

from __future__ import annotations

import statistics


def summarize(samples: list[float]) -> dict[str, float]:
    """p50 and p99 of ``samples`` (seconds) in milliseconds, and how many there were."""
    ms = sorted(s * 1000 for s in samples)
    return {
        "p50": statistics.median(ms),
        "p99": statistics.quantiles(ms, n=100, method="inclusive")[98] if len(ms) > 1 else ms[0],
        "runs": len(ms),
    }
