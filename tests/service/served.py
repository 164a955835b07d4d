"""A real `golem serve` on loopback for the API tests: its own process, state directory,
database and admin key; helpers to make keys and clients."""

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

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
        return key

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
