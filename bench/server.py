"""Calls through `golem serve`'s API beside the same calls on the engine, in one run.

    .venv/bin/python bench/server.py [--clients 50] [--calls 40] [--repetitions 5]
                                     [--profile FILE] [--json]

A real server in its own process (`golem serve --port 0`, its own state directory, the
limits raised to fit ``--clients`` sessions of one tenant, a user key from the database,
not the admin key), and in this process:

* ``api``: what a client of the server runs: ``--clients`` sessions of a RemoteEngine, as
  many concurrent tasks each calling ``box.execute(["true"])`` ``--calls`` times in a row
  on its RemoteBox (over the session's call channel, one WebSocket per session);
* ``http``: the same calls as plain HTTP requests, ``POST /v1/sessions/{id}/exec``, each
  client its own httpx.AsyncClient and so its own connection (for comparison);
* ``direct``: the same on a LocalEngine: as many sessions, as many concurrent tasks each
  calling ``box.execute(["true"])`` ``--calls`` times.

Each repetition runs the three, one after the other (the others idle meanwhile); after
one untimed warm-up round. Per repetition: execs/s (calls / wall time of the round) and each call's
latency (perf_counter around it). Reported: the median execs/s over the repetitions, and
p50 and p99 of all calls' latencies pooled; the ratio API/direct of both. For context, the
floors: a bare ``bwrap ... true`` and ``subprocess true``, one at a time.

Also per exec, the CPU time of the server process and of this one (the clients, or the
engine): the server, its boxes and this client share the machine's cores, so on a
small machine the clients' HTTP work is paid from the same CPUs as the server's, and so is
any other load (the load average is shown). ``--profile FILE`` runs the server under
cProfile (CPU time of its event loop's thread) and prints its busiest functions.

Target: API throughput >= 0.7x direct.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import pstats
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from golem.core import load_config
from golem.sandbox import Box, LocalEngine, RemoteEngine

TARGET_RATIO = 0.7
TRUE = ["true"]
FLOOR_RUNS = 200
STARTUP_TIMEOUT = 120.0
BWRAP = [
    "bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "true",
]  # fmt: skip

Call = Callable[[], Awaitable[None]]

# `python -c` this instead of `-m golem`: uvicorn re-raises SIGTERM once it has shut down,
# which would end `python -m cProfile` before it writes anything.
PROFILED = """
import cProfile, runpy, signal, sys, time
profile = cProfile.Profile(time.thread_time)  # CPU time: waits for a busy CPU do not count
def stop(*_):
    profile.disable()
    profile.dump_stats({path!r})
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
sys.argv = sys.argv[1:]
profile.enable()
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


# The server ---------------------------------------------------------------------------


def server_config(clients: int) -> str:
    """golem.toml: room for ``clients`` sessions of one tenant with a user key."""
    return (
        f"[server]\nmax_sessions = {clients + 8}\n\n"
        f"[server.policies.user]\nmax_sessions = {clients}\n"
    )


@contextmanager
def serving(scratch: Path, clients: int, profile: Path | None) -> Iterator[tuple[str, str, int]]:
    """A `golem serve` on a free loopback port; yields its URL, admin key and pid. With
    ``profile``, the server runs under cProfile and writes its statistics there on exit."""
    config = scratch / "golem.toml"
    config.write_text(server_config(clients))
    admin_key = "admin-" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(scratch / "server-state"),
        GOLEM_ADMIN_KEY=admin_key,
        XDG_CONFIG_HOME=str(scratch / "cfg"),
    )
    profiler = ["-c", PROFILED.format(path=str(profile))] if profile is not None else ["-m"]
    log_path = scratch / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, *profiler, "golem", "serve", "--port", "0", "--config", str(config)],
            env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
        )  # fmt: skip
    try:
        yield _wait_ready(process, log_path), admin_key, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> str:
    """The server's URL, once its log says the startup is complete."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = re.search(r"golem serve: (http://\S+)", text)
        if found and "Application startup complete" in text:
            return found.group(1)
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}):\n{text}")
        time.sleep(0.05)
    raise SystemExit(f"the server did not start in {STARTUP_TIMEOUT}s:\n{log.read_text()}")


# The two sides ------------------------------------------------------------------------


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def user_key(url: str, admin_key: str, tenant: str) -> str:
    """A new user key of ``tenant`` (not the admin key: a user's checks are the ones paid)."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as admin:
        made = await admin.post(
            "/v1/keys", json={"tenant": tenant, "role": "user"}, headers=_auth(admin_key)
        )
        made.raise_for_status()
    key: str = made.json()["key"]
    return key


async def remote_calls(remote: RemoteEngine, clients: int) -> tuple[list[Call], list[Box]]:
    """One call per task, each in its own session of the server, through RemoteBox."""
    boxes = list(await asyncio.gather(*(remote.create_session() for _ in range(clients))))
    return [box_call(box) for box in boxes], boxes


async def http_calls(url: str, key: str, clients: int) -> tuple[list[Call], Call]:
    """One call per client, each in its own session and on its own connection; and a
    closer that ends the sessions and the connections."""
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    connections = [
        httpx.AsyncClient(base_url=url, headers=_auth(key), timeout=120, limits=one)
        for _ in range(clients)
    ]
    opened = await asyncio.gather(*(c.post("/v1/sessions", json={}) for c in connections))
    ids = []
    for response in opened:
        response.raise_for_status()
        ids.append(response.json()["id"])

    def call(client: httpx.AsyncClient, session: str) -> Call:
        async def run() -> None:
            response = await client.post(f"/v1/sessions/{session}/exec", json={"cmd": TRUE})
            if response.status_code != 200 or response.json()["exit_code"] != 0:
                raise SystemExit(f"api call failed: {response.status_code} {response.text}")

        return run

    async def close() -> None:
        for client, session in zip(connections, ids, strict=True):
            (await client.delete(f"/v1/sessions/{session}")).raise_for_status()
            await client.aclose()

    return [call(c, s) for c, s in zip(connections, ids, strict=True)], close


async def direct_calls(engine: LocalEngine, clients: int) -> tuple[list[Call], list[Box]]:
    """One call per task, each in its own session of ``engine``."""
    boxes = list(await asyncio.gather(*(engine.create_session() for _ in range(clients))))
    return [box_call(box) for box in boxes], boxes


def box_call(box: Box) -> Call:
    async def run() -> None:
        result = await box.execute(TRUE)
        if result.exit_code != 0:
            raise SystemExit(f"a call exited {result.exit_code}: {result.stderr_text}")

    return run


def cpu_seconds(server: int) -> dict[str, float]:
    """CPU time used so far by the server process (all its threads) and by this process
    (the HTTP clients, or the engine of the direct side). Boxes are neither."""
    fields = Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()
    times = os.times()
    return {
        "server": (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"),
        "here": times.user + times.system,
    }


async def round_of(calls: list[Call], per_client: int, server: int) -> dict[str, Any]:
    """Every call ``per_client`` times in a row, all concurrently: wall time, latencies,
    and the CPU time per call (ms) of the server process and of this one."""
    latencies: list[float] = []

    async def client(call: Call) -> None:
        for _ in range(per_client):
            start = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - start)

    before = cpu_seconds(server)
    start = time.perf_counter()
    await asyncio.gather(*(client(call) for call in calls))
    wall = time.perf_counter() - start
    after = cpu_seconds(server)
    cpu = {k: (after[k] - before[k]) * 1000 / len(latencies) for k in before}
    return {"wall": wall, "execs_s": len(latencies) / wall, "latencies": latencies, "cpu": cpu}


# Measuring ----------------------------------------------------------------------------


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def floors() -> dict[str, dict[str, float]]:
    """Bare bwrap and subprocess ``true``, one at a time (ms)."""
    found: dict[str, dict[str, float]] = {}
    for name, argv in (("bwrap true", BWRAP), ("subprocess true", TRUE)):
        samples = []
        for index in range(FLOOR_RUNS + 10):
            start = time.perf_counter()
            subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
            if index >= 10:
                samples.append((time.perf_counter() - start) * 1000)
        found[name] = {"p50": statistics.median(samples), "p99": percentile(samples, 99)}
    return found


async def measure(
    scratch: Path, clients: int, calls: int, repetitions: int, profile: Path | None
) -> dict[str, Any]:
    rounds: dict[str, list[dict[str, Any]]] = {"api": [], "http": [], "direct": []}
    config = load_config({"state_dir": str(scratch / "direct-state")}, files=[])
    load = os.getloadavg()[0]
    with serving(scratch, 2 * clients, profile) as (url, admin_key, server):
        remote = RemoteEngine(url, await user_key(url, admin_key, "bench"), config=config)
        async with LocalEngine(config) as engine, remote:
            await engine.start()
            api, remote_boxes = await remote_calls(remote, clients)
            http, close_http = await http_calls(
                url, await user_key(url, admin_key, "bench-http"), clients
            )
            direct, boxes = await direct_calls(engine, clients)
            sides = {"api": api, "http": http, "direct": direct}
            try:
                for repetition in range(repetitions + 1):  # the first warms up
                    for name, side in sides.items():
                        measured = await round_of(side, calls if repetition else 5, server)
                        if repetition:
                            rounds[name].append(measured)
            finally:
                await close_http()
                for box in remote_boxes:
                    await remote.remove_session(box.id)
                for box in boxes:
                    await engine.remove_session(box.id)
    report = summarize(rounds, clients, calls)
    report["machine"]["loadavg_1min"] = [load, os.getloadavg()[0]]
    return report


def summarize(rounds: dict[str, list[dict[str, Any]]], clients: int, calls: int) -> dict[str, Any]:
    sides: dict[str, dict[str, Any]] = {}
    for name, measured in rounds.items():
        pooled = [s * 1000 for r in measured for s in r["latencies"]]
        sides[name] = {
            "execs_s": statistics.median(r["execs_s"] for r in measured),
            "execs_s_each": [r["execs_s"] for r in measured],
            "p50_ms": statistics.median(pooled),
            "p99_ms": percentile(pooled, 99),
            "p50_ms_each": [statistics.median(r["latencies"]) * 1000 for r in measured],
            "cpu_ms_per_exec": {
                k: statistics.median(r["cpu"][k] for r in measured) for k in measured[0]["cpu"]
            },
        }
    api, http, direct = sides["api"], sides["http"], sides["direct"]
    ratio = api["execs_s"] / direct["execs_s"]
    return {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "clients": clients,
        "calls_per_client": calls,
        "repetitions": len(rounds["api"]),
        "sides": sides,
        "ratio": {
            "throughput": ratio,
            "p50": api["p50_ms"] / direct["p50_ms"],
            "p99": api["p99_ms"] / direct["p99_ms"],
            "http_throughput": http["execs_s"] / direct["execs_s"],
        },
        "target": {"throughput_ratio": TARGET_RATIO, "met": ratio >= TARGET_RATIO},
        "floors_ms": floors(),
    }


def print_report(report: dict[str, Any]) -> None:
    machine = report["machine"]
    load = " -> ".join(f"{value:.2f}" for value in machine["loadavg_1min"])
    print(
        f"{report['clients']} concurrent clients x {report['calls_per_client']} calls of "
        f"`true`, {report['repetitions']} repetitions; {machine['cpus']} CPUs shared by the "
        f"server, the boxes and the clients; load average {load}"
    )
    print(f"{'side':<8} {'execs/s':>8} {'p50 ms':>8} {'p99 ms':>8}   execs/s per repetition")
    for name, side in report["sides"].items():
        each = " ".join(f"{value:.0f}" for value in side["execs_s_each"])
        figures = f"{side['execs_s']:8.0f} {side['p50_ms']:8.2f} {side['p99_ms']:8.2f}"
        print(f"{name:<8} {figures}   {each}")
    cpu = {name: side["cpu_ms_per_exec"] for name, side in report["sides"].items()}
    print(
        "CPU ms per exec (median): "
        + "; ".join(
            f"{name}: server {cpu[name]['server']:.2f} + clients {cpu[name]['here']:.2f}"
            for name in ("api", "http")
        )
        + f"; direct: engine {cpu['direct']['here']:.2f} (boxes not counted)"
    )
    ratio = report["ratio"]
    verdict = "met" if report["target"]["met"] else "NOT met"
    print(
        f"api/direct: throughput {ratio['throughput']:.2f}x (target >= {TARGET_RATIO}x: "
        f"{verdict}); latency p50 {ratio['p50']:.2f}x, p99 {ratio['p99']:.2f}x; "
        f"http/direct: throughput {ratio['http_throughput']:.2f}x"
    )
    print(
        "floors, one at a time: "
        + ", ".join(
            f"{name} p50 {f['p50']:.2f} ms p99 {f['p99']:.2f} ms"
            for name, f in report["floors_ms"].items()
        )
    )


def print_profile(path: Path, top: int = 40) -> None:
    """The server's busiest functions, by own time and by cumulative time."""
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(str(path), stream=out).sort_stats(order).print_stats(top)
        print(out.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--calls", type=int, default=40, help="calls per client and round")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--profile", type=Path, help="run the server under cProfile, to FILE")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        parser.error("bubblewrap (bwrap) is not installed")
    with tempfile.TemporaryDirectory(prefix="golem-bench-server-") as scratch:
        Path(scratch).chmod(0o755)
        report = asyncio.run(
            measure(Path(scratch), args.clients, args.calls, args.repetitions, args.profile)
        )
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)
    if args.profile is not None:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
