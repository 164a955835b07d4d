"""A soak of `golem serve`: minutes of sessions, streams and scripted runs, then a store
outage under load; errors, what was lost, and the trend of the server's resources.

    .venv/bin/python bench/soak.py [--minutes 10] [--store sqlite|postgres] [--outage 20]
                                   [--sessions 3] [--runs 2] [--json]

Loopback only. The bench starts everything it uses: a bare repository of
examples/calculator, a `golem serve` (its own state directory and v1 cgroups, retention on
with a short interval), and with ``--store postgres`` a private PostgreSQL cluster
(initdb in a temporary directory, its own port; never the shared test cluster).

The load, all at once, for ``--minutes``:

* ``--sessions`` clients (a user key), each in a loop: a session, calls on it (``exec``,
  ``exec/stream`` read to its end, a file written and read back, a RemoteEngine call on the
  session's WebSocket call channel), the session deleted; and a one-shot ``POST /v1/exec``;
* ``--runs`` clients (a trusted key), each in a loop: a scripted minion run (the scripted
  model of examples/calculator-fix.yaml, the local forge) submitted and its events
  followed to ``run_end``.

Then the outage, under the same load: the PostgreSQL cluster stopped for ``--outage``
seconds (SQLite: an exclusive lock held on the database as long), then started again, and
one more minute of load. Then the load stops, the bench waits for every run to end and
checks what was left: runs ``running`` or ``queued``, sessions listed, boxes, cgroup
directories; then SIGTERM, and again after the server exited.

Printed: calls and errors by kind and status (an error during the outage is counted
apart), latencies p50/p99 by kind, and per metric (server RSS, open descriptors, boxes,
box cgroup directories, database bytes, run files bytes) the value after warm-up, at the
end, their ratio and the linear trend per hour over the samples before the outage.

Goal: 0 errors, 0 leaks, nothing lost, memory flat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from golem.core import load_config
from golem.sandbox import RemoteEngine
from run import EXAMPLES, make_remote  # bench/ is on sys.path
from soak_probe import (
    Postgres,
    Server,
    cgroup_dirs,
    private_postgres,
    remove_cgroups,
    sample,
    sqlite_locked,
    start_server,
)
from soak_report import Tally, ended_runs, print_report, summarize

WARM_UP = 60.0  # seconds of load before the first sample that counts
AFTER_OUTAGE = 60.0
SAMPLE_EVERY = 10.0
RETENTION_DAYS = 60 / 86400  # runs that ended a minute ago are pruned
RETENTION_INTERVAL = 30
DRAIN_TIMEOUT = 120.0
FOLLOW_LIMIT = 600.0  # seconds a run may take to end, reconnects included
BACK_OFF = 1.0  # seconds a client waits after a refusal (a 429's Retry-After is longer)
MODEL = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


def server_config(sessions: int) -> str:
    return (
        f"[server]\nmax_sessions = {2 * sessions + 8}\nmax_queued = 1000\n\n"
        f"[server.retention]\ndays = {RETENTION_DAYS!r}\ninterval = {RETENTION_INTERVAL}\n"
    )


def _ok(response: httpx.Response) -> httpx.Response:
    response.raise_for_status()
    return response


class Failed(Exception):
    """A call answered, but not what it should have."""


# The load ------------------------------------------------------------------------------


async def session_client(url: str, key: str, tally: Tally, until: Callable[[], bool]) -> None:
    """Sessions, their calls, and deletes, in a loop; a one-shot exec between."""
    config = load_config({}, files=[])
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120
    ) as client, RemoteEngine(url, key, config=config) as remote:  # fmt: skip
        while not until():
            made = await tally.call("session create", lambda: _made(client))
            if made is None:
                await asyncio.sleep(BACK_OFF)  # refused: as a client backs off
                continue
            tally.sessions_made += 1
            sid = made
            base = f"/v1/sessions/{sid}"
            for round_ in range(5):
                await tally.call("exec", partial(_exec, client, base))
                await tally.call("exec stream", partial(_stream, client, f"{base}/exec/stream"))
                data = f"round {round_} of {sid}\n".encode() * 100
                await tally.call("file put+get", partial(_file, client, base, data))
            await tally.call("channel exec", partial(_channel, remote, sid))
            # through the RemoteEngine (it closes its handle's channel too); a failed delete
            # is tried again, as a client that means it does, to the drain's end
            await _delete_until_gone(remote, sid, tally)
            await tally.call("one-shot exec", lambda: _once(client))


async def _made(client: httpx.AsyncClient) -> str:
    made: str = _ok(await client.post("/v1/sessions", json={})).json()["id"]
    return made


async def _exec(client: httpx.AsyncClient, base: str) -> None:
    result = _ok(await client.post(f"{base}/exec", json={"cmd": ["echo", "soak"]})).json()
    if result["exit_code"] != 0:
        raise Failed(f"exit {result['exit_code']}")


async def _stream(client: httpx.AsyncClient, path: str) -> None:
    body = {"cmd": ["sh", "-c", "for i in 1 2 3; do echo $i; done"]}
    kinds = []
    async with client.stream("POST", path, json=body) as stream:
        if stream.is_error:
            await stream.aread()  # its problem detail, for the report
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                kinds.append(line.removeprefix("event:").strip())
    if not kinds or kinds[-1] != "exit":
        raise Failed(f"the stream ended after {kinds[-3:]}")


async def _file(client: httpx.AsyncClient, base: str, data: bytes) -> None:
    where = {"path": "/workspace/soak.txt"}
    _ok(await client.put(f"{base}/files", params=where, content=data))
    back = _ok(await client.get(f"{base}/files", params=where)).content
    if back != data:
        raise Failed(f"read back {len(back)} bytes, wrote {len(data)}")


async def _delete_until_gone(remote: RemoteEngine, session_id: str, tally: Tally) -> None:
    for _ in range(10_000):  # the drain's timeout ends it first
        if await tally.call("session delete", partial(_delete, remote, session_id)):
            tally.sessions_deleted += 1
            return
        await asyncio.sleep(BACK_OFF)  # a client's back-off, not a wait for a state


async def _delete(remote: RemoteEngine, session_id: str) -> bool:
    await remote.remove_session(session_id)
    return True


async def _channel(remote: RemoteEngine, session_id: str) -> None:
    box = await remote.get_session(session_id)
    result = await box.execute(["true"])
    if result.exit_code != 0:
        raise Failed(f"exit {result.exit_code}")


async def _once(client: httpx.AsyncClient) -> None:
    body = {"request": {"cmd": ["echo", "once"]}}
    result = _ok(await client.post("/v1/exec", json=body)).json()
    if result["exit_code"] != 0:
        raise Failed(f"exit {result['exit_code']}")


async def run_client(
    url: str, key: str, remote: Path, tally: Tally, until: Callable[[], bool]
) -> None:
    """Scripted runs, one after the other, each followed to its run_end."""
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120
    ) as client:
        while not until():
            request = {"repo": str(remote), "task": "Fix the failing tests", "model": MODEL}
            queued = await tally.call("run submit", partial(client.post, "/v1/runs", json=request))
            if queued is None:
                continue
            if queued.status_code != 202:
                tally.errors[("run submit", str(queued.status_code), tally.phase)] += 1
                tally.examples.setdefault(("run submit", str(queued.status_code)), queued.text)
                await asyncio.sleep(BACK_OFF)  # refused: as a client backs off
                continue
            run_id = queued.json()["id"]
            tally.runs.append(run_id)
            await tally.call("run follow", partial(_follow, client, run_id, tally))


async def _follow(client: httpx.AsyncClient, run_id: str, tally: Tally) -> None:
    """The run's events to its ``run_end``, as a client should follow them: a stream that
    ends with ``event: problem`` (the store away) or a refused reconnect is counted and
    followed again from the last event's id after a back-off."""
    seen, deadline = "", time.monotonic() + FOLLOW_LIMIT
    while time.monotonic() < deadline:
        last = ""
        headers = {"Last-Event-ID": seen} if seen else {}
        async with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as stream:
            if stream.is_error:
                await stream.aread()
                tally.errors[("run follow", str(stream.status_code), tally.phase)] += 1
                tally.examples.setdefault(("run follow", str(stream.status_code)), stream.text)
                await asyncio.sleep(BACK_OFF)
                continue
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    last = line.removeprefix("event:").strip()
                elif line.startswith("id:"):
                    seen = line.removeprefix("id:").strip()
        if last == "run_end":
            return
        tally.errors[("run follow", f"event: {last or 'none'}", tally.phase)] += 1
        await asyncio.sleep(BACK_OFF)  # then again from the last event seen
    raise Failed(f"the run did not end within {FOLLOW_LIMIT:g}s")


# The soak ------------------------------------------------------------------------------


async def _key(url: str, admin_key: str, tenant: str, role: str) -> str:
    async with httpx.AsyncClient(base_url=url, timeout=60) as admin:
        made = await admin.post(
            "/v1/keys", json={"tenant": tenant, "role": role},
            headers={"Authorization": f"Bearer {admin_key}"},
        )  # fmt: skip
    key: str = _ok(made).json()["key"]
    return key


async def _outage(server: Server, postgres: Postgres | None, seconds: float) -> None:
    """The store away for ``seconds``: PostgreSQL stopped, or SQLite locked."""
    if postgres is not None:
        await asyncio.to_thread(postgres.ctl, "stop", "-m", "fast")
        await asyncio.sleep(seconds)  # the outage's length, not a wait for anything
        await asyncio.to_thread(postgres.ctl, "start")
        return

    def hold() -> None:
        with sqlite_locked(server.state_dir / "golem.db"):
            time.sleep(seconds)

    await asyncio.to_thread(hold)


async def _sampler(server: Server, postgres: Postgres | None, tally: Tally,
                   samples: list[dict[str, Any]]) -> None:  # fmt: skip
    while True:
        taken: dict[str, Any] = await asyncio.to_thread(sample, server, postgres)
        taken["phase"] = tally.phase
        samples.append(taken)
        await asyncio.sleep(SAMPLE_EVERY)


async def drive(server: Server, postgres: Postgres | None, remote: Path,
                args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    """The load, the outage, the drain and the checks; everything but the server's end."""
    user = await _key(server.url, server.admin_key, "soak", "user")
    trusted = await _key(server.url, server.admin_key, "soak-runs", "trusted")
    tally, samples = Tally(), list[dict[str, Any]]()
    stopping = False

    def until() -> bool:
        return stopping

    clients = [session_client(server.url, user, tally, until) for _ in range(args.sessions)]
    clients += [run_client(server.url, trusted, remote, tally, until) for _ in range(args.runs)]
    load = asyncio.gather(*clients)
    sampler = asyncio.ensure_future(_sampler(server, postgres, tally, samples))
    started = time.monotonic()
    await asyncio.sleep(WARM_UP)  # phases of the soak are lengths of time
    tally.phase = "steady"
    await asyncio.sleep(max(args.minutes * 60 - WARM_UP, 0))
    tally.phase = "outage"
    await _outage(server, postgres, args.outage)
    tally.phase = "after outage"
    await asyncio.sleep(AFTER_OUTAGE)
    stopping = True
    tally.phase = "drain"
    try:
        await asyncio.wait_for(load, DRAIN_TIMEOUT)
    except TimeoutError:
        tally.errors[("load", "clients did not finish", "drain")] += 1
    headers = {"Authorization": f"Bearer {trusted}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as runs:
        statuses, reasons = await ended_runs(runs, tally.runs, DRAIN_TIMEOUT)
        listed = _ok(await runs.get("/v1/runs", params={"limit": 500})).json()
    async with httpx.AsyncClient(
        base_url=server.url, headers={"Authorization": f"Bearer {user}"}, timeout=60
    ) as sessions:
        left_sessions = len(_ok(await sessions.get("/v1/sessions")).json())
    sampler.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampler
    idle = sample(server, postgres)
    idle["phase"] = "idle"
    samples.append(idle)
    return {
        "seconds": time.monotonic() - started,
        "tally": tally,
        "samples": samples,
        "runs": dict(statuses),
        "failed_because": dict(reasons),
        "runs_active_listed": sum(1 for run in listed if run["status"] in ("running", "queued")),
        "sessions": {
            "made": tally.sessions_made,
            "deleted": tally.sessions_deleted,
            "listed_at_end": left_sessions,
        },
    }


def _server_end(server: Server, found: dict[str, Any]) -> None:
    """SIGTERM the server; what its log said and what it left."""
    found["exit_code"] = server.stop()
    log = server.log.read_text(errors="replace")
    found["log"] = {
        "tracebacks": log.count("Traceback (most recent call last)"),
        "errors": sum(1 for line in log.splitlines() if line.startswith("ERROR")),
        "warnings": sum(1 for line in log.splitlines() if line.startswith("WARNING")),
        "shutdown_failed": "Application shutdown failed" in log,
        "first_errors": [line[:300] for line in log.splitlines()
                         if line.startswith(("ERROR", "WARNING"))][:8],
    }  # fmt: skip
    boxes = server.state_dir / "boxes"
    found["after_exit"] = {
        "boxes": len(list(boxes.iterdir())) if boxes.is_dir() else 0,
        "cgroup_dirs": cgroup_dirs(server.groups),
        "run_dirs": len(list((server.state_dir / "runs").glob("*"))),
        "archives": len(list((server.state_dir / "archive").glob("*.tar.gz"))),
    }
    remove_cgroups(server.groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--outage", type=float, default=20.0, help="seconds without the store")
    parser.add_argument("--sessions", type=int, default=3, help="session clients")
    parser.add_argument("--runs", type=int, default=2, help="run clients")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        parser.error("bubblewrap (bwrap) is not installed")
    with tempfile.TemporaryDirectory(prefix="golem-soak-") as name:
        scratch = Path(name)
        scratch.chmod(0o755)
        remote = make_remote(scratch)
        with contextlib.ExitStack() as stack:
            postgres = (
                stack.enter_context(private_postgres(scratch))
                if args.store == "postgres" else None
            )  # fmt: skip
            server = start_server(
                scratch, server_config(args.sessions), postgres.url if postgres else None
            )
            try:
                found = asyncio.run(drive(server, postgres, remote, args))
            finally:
                ended: dict[str, Any] = {}
                _server_end(server, ended)
            report = summarize({**found, **ended}, args)
    if args.json:
        json.dump(report, sys.stdout, indent=2, default=str)
        print()
    else:
        print_report(report)


if __name__ == "__main__":
    main()
