"""`golem toolshed ls`: every configured server with its tools (a real HTTP server from
npm on loopback, a stdio one in a box) and which blueprint steps get each; a server that
cannot start is shown with why, and the others are still listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.context.toolshed.servers import everything_over_http

pytestmark = pytest.mark.bwrap

EVIL = Path(__file__).parents[1] / "attacks" / "toolshed_servers" / "evil_mcp.py"
MINION = Path(__file__).parents[2] / "src" / "golem" / "blueprint" / "builtin" / "minion.yaml"


def write_config(tmp_path: Path, port: int) -> Path:
    """A golem.toml (JSON's strings and arrays are TOML's too)."""
    evil = json.dumps(["python3", "-c", EVIL.read_text(), "names"])
    bad = json.dumps(["sh", "-c", "echo 'cannot start' >&2; exit 3"])
    path = tmp_path / "golem.toml"
    path.write_text(
        f"""[engine.defaults.egress]
allow_cidrs = ["127.0.0.1/32"]
ports = [{port}]

[[toolshed.servers]]
name = "every"
url = "http://127.0.0.1:{port}/mcp"

[[toolshed.servers]]
name = "evil"
command = {evil}

[[toolshed.servers]]
name = "bad"
command = {bad}
"""
    )
    return path


def write_blueprint(tmp_path: Path) -> Path:
    data = yaml.safe_load(MINION.read_text())
    nodes = {node["id"]: node for node in data["nodes"]}
    nodes["implement"]["toolshed"] = ["every.echo", "evil.ok"]
    nodes["verify"]["fix"]["toolshed"] = ["every.*"]
    path = tmp_path / "shed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def golem(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(GOLEM_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "golem", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip


def test_ls_shows_servers_tools_and_the_steps_that_get_them(tmp_path: Path) -> None:
    with everything_over_http() as port:
        config, blueprint = write_config(tmp_path, port), write_blueprint(tmp_path)
        done = golem(tmp_path, "toolshed", "ls", "--json", "--config", str(config),
                     "--blueprint", str(blueprint))  # fmt: skip
        text = golem(tmp_path, "toolshed", "ls", "--config", str(config),
                     "--blueprint", str(blueprint))  # fmt: skip
    assert done.returncode == 0, done.stderr
    servers = {server["name"]: server for server in json.loads(done.stdout)["servers"]}
    every = {tool["name"]: tool for tool in servers["every"]["tools"]}
    assert servers["every"]["transport"] == "http"
    assert every["echo"]["steps"] == ["implement", "verify.fix"]
    assert every["get-sum"]["steps"] == ["verify.fix"]
    assert every["get-sum"]["wire_name"] == "every__get-sum"
    evil = {tool["name"]: tool for tool in servers["evil"]["tools"]}
    assert evil["ok"]["steps"] == ["implement"]
    assert evil["$(id)"]["steps"] == []
    assert servers["bad"]["tools"] == []
    assert "exited with code 3" in servers["bad"]["error"]
    assert "cannot start" in servers["bad"]["error"]
    assert text.returncode == 0, text.stderr
    assert "every__echo" in text.stdout
    assert "implement, verify.fix" in text.stdout
    assert "unavailable:" in text.stdout
    assert "import json" not in text.stdout  # a long command is shortened


def test_ls_without_servers_says_how_to_add_one(tmp_path: Path) -> None:
    done = golem(tmp_path, "toolshed", "ls")
    assert done.returncode == 0, done.stderr
    assert "no toolshed servers: add [[toolshed.servers]] to golem.toml" in done.stdout
