"""The `golem` command as a user runs it: a real process, real boxes, real exit codes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from golem.sandbox import ExecResult
from tests.cli.invoke import golem
from tests.cli.terminal import read_until
from tests.sandbox.binary_output import ERR_PAYLOAD, PAYLOAD, WRITER
from tests.sandbox.nethosts import NetHosts

pytestmark = pytest.mark.bwrap


def test_exec_streams_output_and_exits_with_the_box_exit_code(golem_env: dict[str, str]) -> None:
    done = golem(golem_env, "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (done.stdout, done.stderr, done.returncode) == (b"out\n", b"err\n", 3)


def test_exec_code_script_file_and_stdin(golem_env: dict[str, str], tmp_path: Path) -> None:
    assert golem(golem_env, "exec", "-c", "print(6*7)").stdout == b"42\n"
    script = tmp_path / "hello.js"
    script.write_text("console.log('from node')")
    assert golem(golem_env, "exec", str(script)).stdout == b"from node\n"
    assert golem(golem_env, "exec", "--", "cat", stdin=b"piped").stdout == b"piped"


def test_exec_writes_the_boxs_bytes_unchanged(golem_env: dict[str, str]) -> None:
    """`golem exec -- cat image.png > copy.png` copies the file: no byte is decoded."""
    done = golem(golem_env, "exec", "-c", WRITER)
    assert (done.stdout, done.stderr, done.returncode) == (PAYLOAD, ERR_PAYLOAD, 0)
    assert golem(golem_env, "exec", "--", "cat", stdin=PAYLOAD).stdout == PAYLOAD
    printed = golem(golem_env, "exec", "--json", "-c", WRITER).stdout
    as_json = ExecResult.model_validate_json(printed)
    assert (as_json.stdout, as_json.stderr) == (PAYLOAD, ERR_PAYLOAD)


def test_exec_json_prints_the_result(golem_env: dict[str, str]) -> None:
    done = golem(
        golem_env,
        "exec",
        "--json",
        "--secret",
        "TOKEN=hunter22",
        "--",
        "sh",
        "-c",
        "echo $TOKEN; exit 5",
    )
    result = ExecResult.model_validate_json(done.stdout)  # output in base64
    assert done.returncode == 5
    assert result.exit_code == 5
    assert result.stdout == b"***\n"
    assert b"hunter22" not in done.stdout + done.stderr


def test_exec_applies_limits_and_env_flags(golem_env: dict[str, str]) -> None:
    done = golem(
        golem_env,
        "exec",
        "--json",
        "--timeout",
        "1",
        "--env",
        "A=1",
        "--memory",
        "64m",
        "--pids",
        "32",
        "--cpus",
        "0.5",
        "--",
        "sh",
        "-c",
        "echo $A; sleep 20",
    )
    result = ExecResult.model_validate_json(done.stdout)
    assert result.stdout == b"1\n"
    assert result.timed_out
    assert done.returncode == 137


def test_exec_network_host_flag_reaches_host_interfaces(golem_env: dict[str, str]) -> None:
    none = golem(golem_env, "exec", "--", "cat", "/proc/net/dev")
    host = golem(golem_env, "exec", "--network", "host", "--", "cat", "/proc/net/dev")
    assert none.stdout.count(b":") == 1  # only lo
    assert host.stdout.count(b":") >= none.stdout.count(b":")
    assert b"WARNING: network=host" in host.stderr
    assert b"WARNING" not in none.stderr


def filtered(env: dict[str, str], net: NetHosts, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`golem exec --network filtered` allowing allowed.test, asking the test DNS server."""
    env = {**env, "GOLEM_ENGINE__NETWORK__NAMESERVERS": json.dumps([net.dns.address])}
    policy = ["--allow", r"^allowed\.test$", "--allow-cidr", "127.0.0.2/32"]
    policy += ["--allow-port", str(net.plain.port)]
    return golem(env, "exec", "--network", "filtered", *policy, *args)


def test_exec_filtered_network_prints_its_log_on_request(
    golem_env: dict[str, str], net: NetHosts
) -> None:
    port = net.plain.port
    script = f"curl -s http://allowed.test:{port}/hello.txt; curl -s http://unlisted.test:{port}/"
    done = filtered(golem_env, net, "--net-log", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"hello from the allowed host\n")
    assert b"refused (not in allow list)" in done.stdout
    log = done.stderr.decode()
    assert "network log (2 decisions)" in log
    assert "allowed   allowed.test" in log
    assert "refused   unlisted.test" in log


def test_exec_json_carries_the_network_log(golem_env: dict[str, str], net: NetHosts) -> None:
    url = f"http://allowed.test:{net.plain.port}/hello.txt"
    done = filtered(golem_env, net, "--json", "--", "curl", "-s", url)
    [entry] = json.loads(done.stdout)["network"]
    assert (entry["host"], entry["allowed"], entry["address"]) == (
        "allowed.test",
        True,
        "127.0.0.2",
    )
    assert entry["bytes_down"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["exec", "--memory", "lots", "--", "true"], b"not a size"),
        (["exec", "--workdir", "/etc", "--", "true"], b"outside /workspace"),
        (["exec", "--image", "/no/such/dir", "--", "true"], b"is not a directory"),
        (["exec", "--runtime", "node", "--", "true"], b"--runtime goes with"),
        (["exec"], b"nothing to run"),
        (["exec", "--env", "NOEQUALS", "--", "true"], b"NAME=VALUE"),
        (["exec", "--network", "everywhere", "--", "true"], b"network"),
        (["exec", "--allow", "x", "--", "true"], b"need --network filtered"),
        (["exec", "--network", "filtered", "--allow", "(", "--", "true"], b"regular expression"),
        (["exec", "--network", "filtered", "--allow-cidr", "10.0/99", "--", "true"], b"range"),
        (["exec", "--network", "filtered", "--allow-port", "70000", "--", "true"], b"TCP port"),
        (["sessions", "rm", "box-000000000000"], b"no box"),
    ],
)
def test_bad_input_is_one_line_exit_2_no_traceback(
    golem_env: dict[str, str], args: list[str], message: bytes
) -> None:
    done = golem(golem_env, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert b"Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_missing_bubblewrap_is_explained(golem_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "golem.toml"
    config.write_text('[engine.backend]\ntype = "process"\nbwrap = "/nonexistent/bwrap"\n')
    done = golem(golem_env, "exec", "--config", str(config), "--", "true")
    assert done.returncode == 2
    assert b"bubblewrap" in done.stderr
    assert b"apt-get install bubblewrap" in done.stderr


def test_config_show_and_schema(golem_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "golem.toml").write_text("[engine.defaults]\npids = 99\n")
    shown = golem(
        {**golem_env, "GOLEM_ENGINE__DEFAULTS__CPUS": "2"}, "config", "show", cwd=tmp_path
    )
    config = json.loads(shown.stdout.split(b"\n", 1)[1])
    assert config["engine"]["defaults"]["pids"] == 99
    assert config["engine"]["defaults"]["cpus"] == 2
    schema = json.loads(golem(golem_env, "config", "schema").stdout)
    assert "engine" in schema["properties"]


def test_sessions_ls_and_prune_on_an_empty_state(golem_env: dict[str, str]) -> None:
    assert golem(golem_env, "sessions", "ls").stdout == b"no boxes\n"
    assert json.loads(golem(golem_env, "sessions", "ls", "--json").stdout) == []
    assert golem(golem_env, "prune").stdout == b"pruned 0 box(es)\n"


def test_shell_gives_an_interactive_tty(golem_env: dict[str, str]) -> None:
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "golem", "shell"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=golem_env,
        close_fds=True,
    ) as process:
        os.close(follower)
        assert b"$ " in read_until(leader, b"$ ")  # the box's prompt
        os.write(leader, b"tty && echo answer=$((6*7)) && exit 7\r")
        output = read_until(leader, b"answer=42")
        assert process.wait(timeout=60) == 7
    os.close(leader)
    assert b"answer=42" in output
    assert b"/dev/pts/" in output
