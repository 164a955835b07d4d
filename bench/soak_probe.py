"""What bench/soak.py measures and what it starts besides the load: a `golem serve` in a
cgroup of its own (so the cgroup directories its boxes leave can be counted apart from other
golem processes on the machine), a private PostgreSQL, a store outage, and the samples of the
server's resources with their linear trend per hour."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = 120.0
CGROUPS = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu")
PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
METRICS = ("rss_mb", "fds", "boxes", "cgroup_dirs", "db_mb", "run_files_mb")


# The server, in a cgroup of its own ----------------------------------------------------


def _own_cgroup(controller: str) -> str | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return None


def private_cgroups(name: str) -> list[Path]:
    """v1 groups ``name`` beside this process's own, one per controller golem uses: the
    server put there makes its boxes' groups under them (``<group>/golem/<box>``); none
    (not v1, or not writable) and the boxes' groups are counted machine-wide."""
    groups = []
    for controller in V1_CONTROLLERS:
        own = _own_cgroup(controller)
        hierarchy = CGROUPS / controller
        if own is None or not (hierarchy / "cgroup.procs").is_file():
            return []
        groups.append(hierarchy / own.lstrip("/") / name)
    try:
        for group in groups:
            group.mkdir()
    except OSError:
        return []
    return groups


def cgroup_dirs(groups: list[Path]) -> int:
    """Box cgroup directories: under the server's own groups, or all golem's on v2."""
    parents = [group / "golem" for group in groups] or [CGROUPS / "golem"]
    return sum(1 for parent in parents if parent.is_dir() for d in parent.iterdir() if d.is_dir())


def remove_cgroups(groups: list[Path]) -> None:
    """Remove the server's groups once it exited (what its boxes left stays, counted)."""
    for group in groups:
        with contextlib.suppress(OSError):
            (group / "golem").rmdir()
        with contextlib.suppress(OSError):
            group.rmdir()


@dataclass
class Server:
    """A `golem serve` the soak started: its process, URL, keys and state directory."""

    process: subprocess.Popen[bytes]
    url: str
    admin_key: str
    state_dir: Path
    log: Path
    env: dict[str, str]
    groups: list[Path] = field(default_factory=list)

    def stop(self) -> int:
        """SIGTERM, as an operator stops it; its exit status."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
            return -9


def start_server(scratch: Path, config: str, database_url: str | None) -> Server:
    """`golem serve --port 0` with ``config``, its own state directory and cgroups."""
    (scratch / "golem.toml").write_text(config)
    admin_key = "admin-" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(scratch / "state"),
        GOLEM_ADMIN_KEY=admin_key,
        XDG_CONFIG_HOME=str(scratch / "cfg"),
    )
    if database_url:
        env["GOLEM_DATABASE_URL"] = database_url
    groups = private_cgroups(f"golem-soak-{secrets.token_hex(4)}")
    procs = [str(group / "cgroup.procs") for group in groups]

    def join() -> None:  # in the child, before exec
        for path in procs:
            with open(path, "w") as joined:
                joined.write(str(os.getpid()))

    log = scratch / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "golem", "serve", "--port", "0",
             "--config", str(scratch / "golem.toml")],
            env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True,
            preexec_fn=join if procs else None,  # noqa: PLW1509 - before the server's threads
        )  # fmt: skip
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = re.search(r"golem serve: (http://\S+)", text)
        if found and "Application startup complete" in text:
            return Server(process, found.group(1), admin_key, scratch / "state", log, env, groups)
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}):\n{text}")
        time.sleep(0.05)  # polling the log: the server has no readiness event to wait on
    process.kill()
    raise SystemExit(f"the server did not start in {STARTUP_TIMEOUT}s:\n{log.read_text()}")


# A private PostgreSQL ------------------------------------------------------------------


@dataclass
class Postgres:
    """A PostgreSQL cluster of the soak's own (never the shared test cluster)."""

    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str) -> None:
        sockets = str(self.data.parent)
        options = f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1"
        _as_postgres(
            "pg_ctl", "-D", str(self.data), "-w", "-l", str(self.data.parent / "pg.log"),
            "-o", options, *args,
        )  # fmt: skip

    def size(self) -> int:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres", connect_timeout=2
        ) as db:
            row = db.execute("SELECT pg_database_size('postgres')").fetchone()
        return int(row[0]) if row else 0


def _as_postgres(tool: str, *args: str) -> None:
    command = [str(PG_BIN[-1] / tool), *args]
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


@contextmanager
def private_postgres(scratch: Path) -> Iterator[Postgres]:
    """initdb and start a cluster in ``scratch`` on a free loopback port; stop it after."""
    if not PG_BIN:
        raise SystemExit("PostgreSQL is not installed (/usr/lib/postgresql/*/bin)")
    home = scratch / "pg"
    home.mkdir()
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cluster = Postgres(home / "data", port)
    _as_postgres("initdb", "-D", str(cluster.data), "-A", "trust", "-U", "postgres")
    cluster.ctl("start")
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster.ctl("stop", "-m", "fast")


@contextmanager
def sqlite_locked(database: Path) -> Iterator[None]:
    """Hold an exclusive lock on the SQLite store: every writer waits, as on an outage."""
    locker = sqlite3.connect(database, isolation_level=None, timeout=60)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        yield
        locker.execute("ROLLBACK")
    finally:
        locker.close()


# Samples and their trend ---------------------------------------------------------------


def _tree_bytes(*roots: Path) -> int:
    """Bytes of the regular files under ``roots`` (what vanishes meanwhile is skipped)."""
    total = 0
    for root in roots:
        for parent, _dirs, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    found = os.lstat(os.path.join(parent, name))
                    total += found.st_size if stat.S_ISREG(found.st_mode) else 0
    return total


def sample(server: Server, postgres: Postgres | None) -> dict[str, Any]:
    """One reading of the server's resources (None: could not be read, as in an outage)."""
    pid = server.process.pid
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    boxes_dir = server.state_dir / "boxes"
    db: float | None
    if postgres is None:
        db = sum(p.stat().st_size for p in server.state_dir.glob("golem.db*") if p.is_file())
    else:
        try:
            db = postgres.size()
        except Exception:  # the database is down: no reading
            db = None
    state = server.state_dir
    return {
        "t": time.monotonic(),
        "rss_mb": rss,
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "boxes": len(list(boxes_dir.iterdir())) if boxes_dir.is_dir() else 0,
        "cgroup_dirs": cgroup_dirs(server.groups),
        "db_mb": None if db is None else db / 2**20,
        "run_files_mb": _tree_bytes(state / "runs", state / "archive", state / "trajectories")
        / 2**20,
    }


def trend_per_hour(samples: list[dict[str, Any]], metric: str) -> float | None:
    """The least-squares slope of ``metric`` over time, per hour."""
    points: list[tuple[float, float]] = [
        (float(s["t"]), float(s[metric])) for s in samples if s[metric] is not None
    ]
    if len(points) < 3:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600
