"""A real `golem serve` on loopback for the API tests: its own process, state directory,
database and admin key; helpers to make keys and clients.

A server is shared: by a module (``shared_server``), or by every module of a directory
(``plain_server``, ``unpooled_server``: a directory's conftest takes them), each test in
tenants of its own (``Served.tenant_key``) and each module leaving the server as it found it
(``Served.tidied``). A test starts a server of
its own only to kill or restart it, to give it a configuration that cannot be a tenant's,
or to watch the process itself (a fault, its memory)."""

from __future__ import annotations

import base64
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from golem.blueprint.state import FINAL

STARTUP_TIMEOUT = 120.0


def unb64(value: object) -> bytes:
    """The bytes of a base64 field of the API's JSON (a call's output, an event's data)."""
    assert isinstance(value, str), value
    return base64.urlsafe_b64decode(value)


@dataclass
class Served:
    """A running server, and how to reach it."""

    url: str
    admin_key: str
    process: subprocess.Popen[bytes]
    state_dir: Path
    env: dict[str, str]
    output: list[str] = field(default_factory=list)
    keys_made: list[str] = field(default_factory=list)

    def client(self, key: str | None = None, **kwargs: object) -> httpx.Client:
        """A client of the API (with ``key`` as its bearer key, when given)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120, **kwargs)  # type: ignore[arg-type]

    def admin(self) -> httpx.Client:
        """A client with the admin key."""
        return self.client(self.admin_key)

    def key(self, tenant: str, role: str = "user") -> str:
        """A new API key of ``tenant`` with ``role``."""
        with self.admin() as admin:
            made = admin.post("/v1/keys", json={"tenant": tenant, "role": role})
        made.raise_for_status()
        key: str = made.json()["key"]
        self.keys_made.append(key)
        return key

    def tenant_key(self, stem: str = "tenant", role: str = "user") -> str:
        """A key of a new tenant, named ``stem`` and a suffix no other test shares: what it
        makes and lists on a shared server is its own."""
        return self.key(fresh_tenant(stem), role)

    @contextmanager
    def tidied(self) -> Iterator[Served]:
        """This server, for a module that shares it: what the keys made meanwhile left
        going is stopped at the end (``tidy``)."""
        since = len(self.keys_made)
        try:
            yield self
        finally:
            self.tidy(since)

    def tidy(self, since: int = 0) -> None:
        """Stop what the tenants of the keys made since the ``since``-th left going: their
        loops, runs and sessions (a shared server's capacity is for the next module)."""
        with self.admin() as admin:
            revoked = {k["id"] for k in admin.get("/v1/keys").json() if k["revoked"]}
        for key in self.keys_made[since:]:
            if key.split("_")[1] in revoked:
                continue
            with self.client(key) as client:
                _tidy_tenant(client)

    def kill(self) -> None:
        """SIGKILL the server (its boxes are left behind, as after a crash)."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        """Stop the server as an operator does (SIGTERM), and wait for it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


def fresh_tenant(stem: str = "tenant") -> str:
    """A tenant name of ``stem`` no other test uses."""
    return f"{stem}-{secrets.token_hex(4)}"


def _tidy_tenant(client: httpx.Client) -> None:
    """Stop a tenant's active loops and runs, and end its sessions."""
    loops = client.get("/v1/loops")
    for loop in loops.json() if loops.status_code == 200 else []:
        if loop["status"] in ("active", "paused"):
            client.post(f"/v1/loops/{loop['id']}/stop")
    runs = client.get("/v1/runs")
    for run in runs.json() if runs.status_code == 200 else []:
        if run["status"] not in FINAL:
            client.post(f"/v1/runs/{run['id']}/cancel")
    for session in client.get("/v1/sessions").json():
        client.delete(f"/v1/sessions/{session['id']}")


def server_env(state_dir: Path, admin_key: str) -> dict[str, str]:
    """The environment of a test server: no GOLEM_* of the caller's, its own state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(state_dir),
        GOLEM_ADMIN_KEY=admin_key,
        XDG_CONFIG_HOME=str(state_dir.parent / "cfg"),
    )
    return env


def _wait_ready(process: subprocess.Popen[bytes], output: list[str]) -> str:
    """The server's URL, once it says its startup is complete."""
    assert process.stderr is not None
    url = None
    while True:
        ready, _, _ = select.select([process.stderr], [], [], STARTUP_TIMEOUT)
        assert ready, f"the server said nothing for {STARTUP_TIMEOUT}s: {''.join(output)}"
        line = process.stderr.readline().decode(errors="replace")
        assert line, f"the server exited ({process.wait()}): {''.join(output)}"
        output.append(line)
        found = re.search(r"golem serve: (http://\S+)", line)
        if found:
            url = found.group(1)
        if "Application startup complete" in line:
            assert url is not None, "".join(output)
            return url


def launch(
    state_dir: Path,
    *,
    config: str = "",
    admin_key: str | None = None,
    env: dict[str, str] | None = None,
) -> Served:
    """Start `golem serve --port 0` with ``config`` (golem.toml text) and wait for it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    config_file = state_dir.parent / "golem.toml"
    config_file.write_text(config)
    key = admin_key or "admin-" + secrets.token_hex(16)
    environment = {**server_env(state_dir, key), **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "golem", "serve", "--port", "0", "--config", str(config_file)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    output: list[str] = []
    try:
        url = _wait_ready(process, output)
    except BaseException:
        process.kill()
        process.wait(30)
        raise
    threading.Thread(target=_drain, args=(process, output), daemon=True).start()
    return Served(url, key, process, state_dir, environment, output)


def _drain(process: subprocess.Popen[bytes], output: list[str]) -> None:
    """Keep reading the server's log, so that a full pipe never blocks it."""
    assert process.stderr is not None
    with process.stderr:
        for line in process.stderr:
            output.append(line.decode(errors="replace"))


@contextmanager
def serving(state_dir: Path, **kwargs: object) -> Iterator[Served]:
    """A server for the duration of a ``with`` block."""
    served = launch(state_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield served
    finally:
        served.stop()


def shared_server(
    stem: str, *, config: str = "", env: dict[str, str] | None = None
) -> Callable[..., Iterator[Served]]:
    """A module's fixture: one server of ``config`` (golem.toml text) and ``env`` for the
    module's tests, named as the module names it (``served = shared_server(...)``)."""

    def fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
        with serving(tmp_path_factory.mktemp(stem) / "state", config=config, env=env) as server:
            yield server

    return pytest.fixture(scope="module")(fixture)


UNPOOLED = "[engine.pool]\nclean = 0\n"


@pytest.fixture(scope="session")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server of the default configuration, for the session."""
    with serving(tmp_path_factory.mktemp("plain") / "state") as server:
        yield server


@pytest.fixture(scope="session")
def unpooled_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server without a warm pool (every released box stopped, its record gone), for the
    session."""
    with serving(tmp_path_factory.mktemp("unpooled") / "state", config=UNPOOLED) as server:
        yield server


@pytest.fixture(scope="module")
def served(plain_server: Served) -> Iterator[Served]:
    """The session's default server for a module that defines no ``served`` of its own,
    left by the module as it found it."""
    with plain_server.tidied() as server:
        yield server
