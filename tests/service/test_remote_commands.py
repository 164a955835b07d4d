"""`golem run`, `agent`, `shell`, `sessions` and `prune` with ``[remote] url`` set, as a
user runs them: real processes against one real `golem serve` on loopback. The server's
boxes run a setup script (its ``[engine.defaults] setup``) that leaves a marker only they
have, so what the commands bring back proves whose box did the work."""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.blueprint.repos import EXAMPLES, make_remote
from tests.cli.terminal import read_until
from tests.service.served import Served, serving, shared_server

pytestmark = pytest.mark.bwrap

MARKER = "served-by-the-server"
SERVER_CONFIG = f'[engine.defaults]\nsetup = "echo {MARKER} > /tmp/served-marker"\n'
TASK = "Fix the failing tests of the calculator"
FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


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


@pytest.fixture
def submitting_env(
    served: Served, client_env: dict[str, str], request: pytest.FixtureRequest
) -> dict[str, str]:
    """A client whose key may name a repository and a model script on the server's disk
    (the server and the client share this machine)."""
    return {**client_env, "GOLEM_API_KEY": served.tenant_key(request.node.name[:30], "trusted")}


def server_runs(served: Served, key: str) -> list[dict[str, object]]:
    with served.client(key) as client:
        listed = client.get("/v1/runs")
    listed.raise_for_status()
    found: list[dict[str, object]] = listed.json()
    return found


def test_golem_run_submit_runs_on_the_server_and_follows_it_to_its_pr(
    served: Served, submitting_env: dict[str, str], reachable_dir: Path, tmp_path: Path
) -> None:
    remote = make_remote(reachable_dir)
    model = f"scripted:{marking_script(tmp_path)}"
    args = ["run", "--submit", "--repo", str(remote), "--task", TASK, "--model", model]
    done = golem(submitting_env, *args)
    assert done.returncode == 0, done.stderr
    [run] = server_runs(served, submitting_env["GOLEM_API_KEY"])
    assert run["status"] == "succeeded"
    assert f"queued on {served.url} as run {run['id']}" in done.stderr.decode()
    assert b"implement" in done.stderr  # its events, printed as they came
    assert b"succeeded" in done.stdout  # and the report
    with served.client(submitting_env["GOLEM_API_KEY"]) as client:
        diff = client.get(f"/v1/runs/{run['id']}/diff").text
    assert f"+{MARKER}" in diff  # served.txt: written in the server's box
    assert not (Path(submitting_env["GOLEM_STATE_DIR"]) / "golem.db").exists()  # no local run


def test_golem_run_submit_says_what_is_wrong_and_queues_nothing(
    served: Served, submitting_env: dict[str, str], reachable_dir: Path
) -> None:
    remote = str(make_remote(reachable_dir))
    key = submitting_env["GOLEM_API_KEY"]
    no_server = {k: v for k, v in submitting_env.items() if k != "GOLEM_REMOTE__URL"}
    unconfigured = golem(no_server, "run", "--submit", "--repo", remote, "--task", TASK)
    assert unconfigured.returncode != 0
    assert b"set [remote] url" in unconfigured.stderr
    refused = golem(submitting_env, "run", "--submit", "--repo", remote, "--task", TASK,
                    "--budget-usd", "-1")  # fmt: skip
    assert refused.returncode != 0
    assert b"budget_usd" in refused.stderr  # the server's own validation, named
    chosen = golem(submitting_env, "run", "--submit", "--backend", "docker", "--repo", remote,
                   "--task", TASK)  # fmt: skip
    assert b"--backend and --image are the server's to choose" in chosen.stderr
    assert server_runs(served, key) == []


def start_slow_submitted(env: dict[str, str], repo: Path) -> subprocess.Popen[bytes]:
    """`golem run --submit` of a run whose agent takes its time (a minute's command)."""
    slow = Path(__file__).parents[1] / "blueprint" / "scripts" / "slow.yaml"
    args = ["run", "--submit", "--repo", str(repo), "--task", TASK, "--model", f"scripted:{slow}"]
    return subprocess.Popen(
        [sys.executable, "-m", "golem", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def said_until_working(process: subprocess.Popen[bytes]) -> bytes:
    """What the command printed until the agent's slow command ran on the server."""
    assert process.stderr is not None
    said = b""
    for line in process.stderr:
        said += line
        if b"sleep 60" in line:
            break
    return said


def test_ctrl_c_on_a_submitted_run_cancels_it_on_the_server(
    served: Served, submitting_env: dict[str, str], reachable_dir: Path
) -> None:
    with start_slow_submitted(submitting_env, make_remote(reachable_dir)) as process:
        said_until_working(process)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=120)
    assert process.returncode == 4, rest
    [run] = server_runs(served, submitting_env["GOLEM_API_KEY"])
    assert run["status"] == "cancelled"
    assert f"cancelling run {run['id']}".encode() in rest


def test_golem_prepare_submit_prepares_for_the_keys_tenant_and_runs_start_from_it(
    served: Served, submitting_env: dict[str, str], reachable_dir: Path
) -> None:
    remote = str(make_remote(reachable_dir))
    prepared = golem(submitting_env, "prepare", "--submit", "--repo", remote)
    assert prepared.returncode == 0, prepared.stderr
    done = golem(submitting_env, "run", "--submit", "--repo", remote, "--task", TASK,
                 "--model", FIX)  # fmt: skip
    assert done.returncode == 0, done.stderr
    key = submitting_env["GOLEM_API_KEY"]
    run, preparing = server_runs(served, key)  # newest first
    assert preparing["blueprint"] == "prepare"
    started_from = run["started_from"]
    assert isinstance(started_from, dict)
    assert str(started_from["name"]).startswith("prepared-")


def test_a_submitted_run_whose_server_goes_away_is_said_to_go_on_there(
    tmp_path: Path, reachable_dir: Path
) -> None:
    """Its own server, stopped mid-run: the command ends saying where the run is."""
    with serving(tmp_path / "server" / "state") as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
        env.update(
            GOLEM_STATE_DIR=str(tmp_path / "client"),
            GOLEM_REMOTE__URL=server.url,
            GOLEM_API_KEY=server.key("acme", "trusted"),
        )
        with start_slow_submitted(env, make_remote(reachable_dir)) as process:
            said = said_until_working(process)
            server.stop()
            _, rest = process.communicate(timeout=120)
    run_id = said.split(b" as run ")[1].split()[0].decode()
    assert process.returncode != 0
    assert f"Run {run_id} is the server's and goes on there" in rest.decode()
