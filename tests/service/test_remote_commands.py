"""`golem run`, `agent`, `shell`, `sessions` and `prune` with ``[remote] url`` set, as a
user runs them: real processes against one real `golem serve` on loopback. The server's
boxes run a setup script (its ``[engine.defaults] setup``) that leaves a marker only they
have, so what the commands bring back proves whose box did the work."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.cli.terminal import read_until
from tests.service.served import Served, shared_server

pytestmark = pytest.mark.bwrap

MARKER = "served-by-the-server"
SERVER_CONFIG = f'[engine.defaults]\nsetup = "echo {MARKER} > /tmp/served-marker"\n'
TASK = "Fix the failing tests of the calculator"


served = shared_server("remote-cli", config=SERVER_CONFIG)


@pytest.fixture
def client_env(served: Served, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """A client's environment: its own state, ``[remote] url`` the server, a key of a tenant
    of this test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        GOLEM_REMOTE__URL=served.url,
        GOLEM_API_KEY=served.tenant_key(request.node.name[:30]),
        COLUMNS="200",
    )
    return env


def golem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "golem", *args], capture_output=True, env=env, timeout=300,
        check=False,
    )  # fmt: skip


def marking_script(tmp_path: Path) -> Path:
    """A scripted model that copies the box's marker into the work, then fixes the tests."""
    script = tmp_path / "mark.yaml"
    script.write_text(
        "turns:\n"
        "  - tool_calls: [{name: bash, arguments: {command: 'cp /tmp/served-marker served.txt'}}]\n"
        "  - tool_calls: [{name: edit, arguments: {path: calculator.py, "
        "old: '    return a - b', new: '    return a + b'}}]\n"
        "  - tool_calls: [{name: finish, arguments: {summary: fixed}}]\n"
    )
    return script


def server_sessions(served: Served, key: str) -> list[str]:
    with served.client(key) as client:
        listed = client.get("/v1/sessions")
    listed.raise_for_status()
    return [s["id"] for s in listed.json()]


def test_golem_run_reaches_its_pr_with_its_box_on_the_server(
    served: Served, client_env: dict[str, str], reachable_dir: Path, tmp_path: Path
) -> None:
    remote = make_remote(reachable_dir)
    model = f"scripted:{marking_script(tmp_path)}"
    done = golem(client_env, "run", "--repo", str(remote), "--task", TASK, "--model", model)
    assert done.returncode == 0, done.stderr
    assert b"PR: golem://local/" in done.stdout
    shown = golem(client_env, "prs", "show", "1").stdout.decode()
    assert "+    return a + b" in shown
    assert f"+{MARKER}" in shown  # served.txt: written in the server's box
    assert server_sessions(served, client_env["GOLEM_API_KEY"]) == []  # the run removed it


def test_golem_agent_works_on_a_directory_in_a_server_box(
    served: Served, client_env: dict[str, str], tmp_path: Path
) -> None:
    workspace = tmp_path / "calculator"
    shutil.copytree(EXAMPLES / "calculator", workspace)
    model = f"scripted:{marking_script(tmp_path)}"
    done = golem(client_env, "agent", "--model", model, "--workspace", str(workspace), "Fix it")
    assert done.returncode == 0, done.stderr
    assert (workspace / "served.txt").read_text() == f"{MARKER}\n"
    assert "return a + b" in (workspace / "calculator.py").read_text()
    assert server_sessions(served, client_env["GOLEM_API_KEY"]) == []


def test_golem_shell_runs_its_commands_in_a_server_box(client_env: dict[str, str]) -> None:
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "golem", "shell"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=client_env,
        close_fds=True,
    ) as process:
        os.close(follower)
        assert b"$ " in read_until(leader, b"$ "), "no prompt"
        os.write(leader, b"cat /tmp/served-marker; exit 7\r")
        output = read_until(leader, MARKER.encode())
        assert process.wait(timeout=60) == 7
    os.close(leader)
    assert MARKER.encode() in output


def test_golem_sessions_lists_and_removes_the_keys_sessions_on_the_server(
    served: Served, client_env: dict[str, str]
) -> None:
    key = client_env["GOLEM_API_KEY"]
    other = served.tenant_key("someone-else")
    with served.client(key) as mine, served.client(other) as theirs:
        own = mine.post("/v1/sessions", json={"spec": {}}).json()["id"]
        foreign = theirs.post("/v1/sessions", json={"spec": {}}).json()["id"]
    listed = golem(client_env, "sessions", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [b["id"] for b in json.loads(listed.stdout)] == [own]  # not the other tenant's
    assert own.encode() in golem(client_env, "sessions", "ls").stdout
    refused = golem(client_env, "sessions", "rm", foreign)
    assert refused.returncode != 0
    assert foreign.encode() in refused.stderr
    assert server_sessions(served, other) == [foreign]  # untouched
    removed = golem(client_env, "sessions", "rm", own)
    assert removed.returncode == 0, removed.stderr
    assert server_sessions(served, key) == []
    assert golem(client_env, "sessions", "ls").stdout == b"no boxes\n"


def test_golem_prune_says_it_prunes_only_this_machines_boxes(client_env: dict[str, str]) -> None:
    done = golem(client_env, "prune")
    assert done.returncode == 0, done.stderr
    assert b"pruned 0 box(es)" in done.stdout
    assert b"[remote] url" in done.stderr
    assert client_env["GOLEM_REMOTE__URL"].encode() in done.stderr
