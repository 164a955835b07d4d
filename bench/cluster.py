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
  session, and the release; ``lease``: the slot alone (reserved, looked up, removed);
* ``run``: a one-node run (its ``prepare``: the clone of a small local repository) ``--runs``
  times, run by a Runner here (``local``) and carried to a node (``cluster``: the slot, the
  box host's call, the node's runner with its checkpoints, all on the same PostgreSQL
  store), so the difference is what the cluster adds to scheduling a run.

The runs need PostgreSQL: ``GOLEM_BENCH_POSTGRES_URL`` (default: the test cluster's,
``scripts/ensure-postgres``); a database of the bench's own is made and dropped.

Reported: p50 and p99 of each in ms, and the cluster's added latency per call and per
session (p50 difference). The cluster is shut down at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import ray
from ray.cluster_utils import Cluster
from ray.util.placement_group import (
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from sqlalchemy.engine import make_url

from golem.blueprint import Runner, RunRequest
from golem.cluster import ClusterEngine
from golem.cluster.nodes import stop_box_hosts
from golem.core import GolemConfig, load_config
from golem.forge import ForgeCredentials
from golem.sandbox import Engine, LocalEngine
from golem.store import SqlStore
from latency import summarize  # bench/ is on sys.path

NODES = 3
SLOTS = 2
POSTGRES = "postgresql+psycopg://golem:golem@127.0.0.1:55432/golem_test"


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


ONE_NODE = "name: one\nnodes:\n  - {id: prepare, kind: host, action: prepare}\n"


def _repository(parent: Path) -> Path:
    """A bare repository of one commit (what the runs clone)."""
    work, bare = parent / "seed", parent / "seed.git"
    work.mkdir()
    (work / "README.md").write_text("bench\n")
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "PATH": os.environ["PATH"]}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


async def _runs(engine: Engine, config: GolemConfig, state: Path, times: int) -> list[float]:
    """Seconds per one-node run: run here, or carried to a node when ``engine`` carries."""
    store = await SqlStore.open(config)
    blueprint = state / "one.yaml"
    blueprint.write_text(ONE_NODE)
    runner = Runner(config, engine=engine, store=store)
    request = RunRequest(repo=str(_repository(Path(tempfile.mkdtemp(dir=state)))),
                         task="bench", blueprint=str(blueprint))  # fmt: skip

    async def nothing(_: str) -> None:
        return None

    async def once() -> None:
        submitted = await runner.submit(request)
        if isinstance(engine, ClusterEngine):
            await engine.carry_run(submitted, "default", ForgeCredentials(), note=nothing)
        else:
            await runner.run(submitted.id)

    try:
        await once()
        return await _timed(once, times)
    finally:
        await store.close()


async def measure(
    state: Path, calls: int, sessions: int, runs: int, database: str
) -> dict[str, dict[str, float]]:
    """Every figure, from one cluster's life."""
    settings = {"state_dir": str(state), "engine": {"pool": {"clean": 0}},
                "database_url": database}  # fmt: skip
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
        figures["run local"] = summarize(await _runs(local, local_config, state, runs))
        figures["run cluster"] = summarize(await _runs(cluster, cluster_config, state, runs))
    return figures


@contextlib.contextmanager
def _database() -> Iterator[str]:
    """A PostgreSQL database of the bench's own (dropped after)."""
    url = make_url(os.environ.get("GOLEM_BENCH_POSTGRES_URL", POSTGRES))
    name = f"golem_bench_{secrets.token_hex(4)}"
    admin_url = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--runs", type=int, default=20)
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
        with tempfile.TemporaryDirectory() as state, _database() as database:
            figures = asyncio.run(
                measure(Path(state), args.calls, args.sessions, args.runs, database)
            )
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
    ran = figures["run cluster"]["p50"] - figures["run local"]["p50"]
    print(f"added by the cluster: {call:.2f} ms per call, {opened:.1f} ms per session, "
          f"{ran:.1f} ms per run (p50)")  # fmt: skip


if __name__ == "__main__":
    main()
