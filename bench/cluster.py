"""What the Ray cluster adds: a call routed to a node's box host against the same call on a
local engine, and the cost of placing a session (the lease), in one run.

    .venv/bin/python bench/cluster.py [--calls 200] [--sessions 20] [--json]

Needs the ``ray`` extra (``pip install -e '.[ray]'``) and bubblewrap. Starts a real Ray
cluster of three raylets on this machine (``ray.cluster_utils``, one CPU and two box slots
each), this process its driver, and measures, one side after the other:

* ``call``: ``box.execute(["true"])`` ``--calls`` times in a row on one session of a
  LocalEngine (``local``) and on one of a ClusterEngine (``cluster``: the call goes over the
  node's call channel, a WebSocket to its box host);
* ``open``: opening and ending a session ``--sessions`` times on each: for the cluster,
  the slot (a Ray placement group of one ``golem_box``, placed by Ray), the box host's
  session, and the release; ``lease``: the slot alone (reserved, looked up, removed).

Reported: p50 and p99 of each in ms, and the cluster's added latency per call and per
session (p50 difference). The cluster is shut down at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster
from ray.util.placement_group import (
    placement_group,
    placement_group_table,
    remove_placement_group,
)

from golem.cluster import ClusterEngine
from golem.cluster.nodes import stop_box_hosts
from golem.core import load_config
from golem.sandbox import Engine, LocalEngine
from latency import summarize  # bench/ is on sys.path

NODES = 3
SLOTS = 2


async def _timed(work: Callable[[], Awaitable[Any]], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        await work()
        samples.append(time.perf_counter() - started)
    return samples


async def _calls(engine: Engine, calls: int) -> list[float]:
    async with engine.session() as box:
        await box.execute(["true"])  # warm: the channel is open
        return await _timed(lambda: box.execute(["true"]), calls)


async def _opens(engine: Engine, sessions: int) -> list[float]:
    async def once() -> None:
        async with engine.session():
            pass

    await once()  # warm: the box host is up
    return await _timed(once, sessions)


async def _leases(times: int) -> list[float]:
    async def once() -> None:
        slot = placement_group([{"golem_box": 1}])
        await slot.ready()
        placement_group_table(slot)  # which node: what the engine asks next
        remove_placement_group(slot)

    await once()
    return await _timed(once, times)


async def measure(state: Path, calls: int, sessions: int) -> dict[str, dict[str, float]]:
    """Every figure, from one cluster's life."""
    settings = {"state_dir": str(state), "engine": {"pool": {"clean": 0}}}
    local_config = load_config(settings, files=[])
    cluster_config = load_config(
        {**settings, "cluster": {"ray_address": "auto", "node_state_dir": str(state / "n")}},
        files=[],
    )
    figures: dict[str, dict[str, float]] = {}
    async with LocalEngine(local_config) as local, ClusterEngine(cluster_config) as cluster:
        figures["call local"] = summarize(await _calls(local, calls))
        figures["call cluster"] = summarize(await _calls(cluster, calls))
        figures["open local"] = summarize(await _opens(local, sessions))
        figures["open cluster"] = summarize(await _opens(cluster, sessions))
        figures["lease"] = summarize(await _leases(sessions))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"golem_box": SLOTS}}
    )
    try:
        for number in range(1, NODES):
            cluster.add_node(
                num_cpus=1, resources={"golem_box": SLOTS}, labels={"golem-node": f"n{number}"}
            )
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, namespace="golem", log_to_driver=False)
        with tempfile.TemporaryDirectory() as state:
            figures = asyncio.run(measure(Path(state), args.calls, args.sessions))
            stop_box_hosts("golem")
    finally:
        ray.shutdown()
        cluster.shutdown()
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        return
    print(f"{'what':<14} {'p50 ms':>8} {'p99 ms':>8} {'runs':>6}")
    for name, figure in figures.items():
        print(f"{name:<14} {figure['p50']:>8.2f} {figure['p99']:>8.2f} {figure['runs']:>6.0f}")
    call = figures["call cluster"]["p50"] - figures["call local"]["p50"]
    opened = figures["open cluster"]["p50"] - figures["open local"]["p50"]
    print(f"added by the cluster: {call:.2f} ms per call, {opened:.1f} ms per session (p50)")


if __name__ == "__main__":
    main()
