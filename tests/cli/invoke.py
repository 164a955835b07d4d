"""The `golem` command as a test runs it: a real process, with its own state directory and
no configuration files of the machine's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golem.core import GolemConfig


def clean_env(state: Path, home: Path) -> dict[str, str]:
    """This process's environment without any ``GOLEM_`` variable, golem's state in
    ``state`` and its configuration home ``home`` (empty: no config files)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(GOLEM_STATE_DIR=str(state), XDG_CONFIG_HOME=str(home))
    return env


def isolated_env(config: GolemConfig, home: Path) -> dict[str, str]:
    """The environment of a golem process with ``config``'s state directory and backend,
    and no config files."""
    env = clean_env(Path(config.state_dir), home)
    backend = config.engine.backend
    env["GOLEM_ENGINE__BACKEND__TYPE"] = backend.type
    if backend.type == "gvisor":
        env["GOLEM_ENGINE__BACKEND__CGROUPS"] = backend.cgroups
    return env


def golem(
    env: dict[str, str], *args: str, stdin: bytes = b"", cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``golem ARGS`` in ``env``: its exit code and output, as bytes."""
    return subprocess.run(
        [sys.executable, "-m", "golem", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def golem_in(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``golem ARGS`` on the state directory ``state``: its exit code and output, as text."""
    done = golem(clean_env(state, state.parent / "cfg"), *args)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )
