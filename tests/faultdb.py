"""Databases that fail on purpose, for the tests (and benches) of golem under store faults.

``PrivatePostgres`` is a PostgreSQL cluster of the caller's own (initdb and pg_ctl in a
temporary directory, its own port, owned by the ``postgres`` user when run as root): stop
it, freeze it (SIGSTOP every process of it), thaw it and start it again without touching
the shared test cluster. ``SqliteLock`` holds an exclusive lock on a SQLite file, so that
every other connection's transaction waits and fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PrivatePostgres", "SqliteLock", "pg_binaries", "private_postgres"]

PASSWORD = "golem"  # noqa: S105 - a throwaway test cluster's


def pg_binaries() -> Path | None:
    """The newest PostgreSQL server's bin directory, or None when none is installed."""
    base = Path("/usr/lib/postgresql")
    found = sorted(base.glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PrivatePostgres:
    """A PostgreSQL cluster in a new directory of /tmp (one the ``postgres`` user can
    reach, unlike pytest's) on its own loopback port."""

    def __init__(self) -> None:
        binaries = pg_binaries()
        if binaries is None:
            raise RuntimeError("no PostgreSQL under /usr/lib/postgresql (scripts/setup)")
        self.bin = binaries
        self.directory = Path(tempfile.mkdtemp(prefix="golem-pg-"))
        self.data = self.directory / "data"
        self.port = _free_port()
        self.url = f"postgresql+psycopg://golem:{PASSWORD}@127.0.0.1:{self.port}/golem"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=120)

    def create(self) -> None:
        """initdb, start, and make the role and database golem (password golem)."""
        if self._as_postgres:
            shutil.chown(self.directory, "postgres", "postgres")
        secret = self.directory / "pw"
        secret.write_text(PASSWORD)
        if self._as_postgres:
            shutil.chown(secret, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "golem", "--pwfile", str(secret),
                  "-A", "scram-sha-256", "-E", "UTF8", "--locale", "C.UTF-8",
                  "--no-sync")  # fmt: skip
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.directory}'\nfsync = off\n"
                "max_connections = 100\n"
            )
        self.start()
        env = {**os.environ, "PGPASSWORD": PASSWORD}
        subprocess.run(
            [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "golem",
             "-d", "postgres", "-qAtc", "CREATE DATABASE golem"],
            env=env, check=True, capture_output=True, timeout=60,
        )  # fmt: skip

    def start(self) -> None:
        """Start the cluster and wait until it takes connections."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.directory / "log"), "-w",
                  "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        """Stop it at once (connections are cut, as in an outage)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)

    def pids(self) -> list[int]:
        """The postmaster and every process it started."""
        pidfile = self.data / "postmaster.pid"
        if not pidfile.exists():
            return []
        main = int(pidfile.read_text().split()[0])
        children = ["pgrep", "-P", str(main)]
        listed = subprocess.run(children, capture_output=True, text=True, check=False)
        return [main, *(int(pid) for pid in listed.stdout.split())]

    def freeze(self) -> None:
        """SIGSTOP every process of the cluster: connections stay open and answer nothing."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT what ``freeze`` stopped."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def destroy(self) -> None:
        """Thaw, stop and remove the cluster."""
        self.thaw()
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A private cluster for a ``with`` block, removed after it."""
    cluster = PrivatePostgres()
    try:
        cluster.create()
        yield cluster
    finally:
        cluster.destroy()


class SqliteLock:
    """A write lock on a SQLite file: while it is held, no other connection can write (in
    WAL mode, as golem's, they can still read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None

    def hold(self) -> None:
        """Take the lock (waits up to 30 s for current writers)."""
        connection = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("SELECT count(*) FROM runs").fetchone()
        self._connection = connection

    def release(self) -> None:
        """Let the others go on."""
        if self._connection is not None:
            self._connection.rollback()
            self._connection.close()
            self._connection = None


def wait_until(condition: object, timeout: float = 60.0, what: str = "a condition") -> None:
    """Poll ``condition()`` until it holds (no event to wait on across processes)."""
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)
