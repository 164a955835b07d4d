"""A real MCP client nobody here wrote lists golem's tools: the MCP Inspector's CLI,
installed by the test from the npm registry (cached per version), against a real
`golem serve`'s /mcp with an API key as its bearer header; without the key it gets
nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.context.toolshed.servers import npm_package
from tests.service.mcp_clients import TOOLS
from tests.service.served import Served, serving

INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0")

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="needs node and npm")


@pytest.fixture(scope="session")
def inspector() -> Path:
    """The Inspector's launcher script, installed once per version."""
    name, _ = INSPECTOR
    root = npm_package(*INSPECTOR)
    return root / "node_modules" / name / "clients" / "launcher" / "build" / "index.js"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("inspector") / "state") as server:
        yield server


def list_tools(inspector: Path, url: str, *headers: str) -> subprocess.CompletedProcess[str]:
    """`mcp-inspector --cli URL --transport http --method tools/list [--header ...]`."""
    command = ["node", str(inspector), "--cli", f"{url}/mcp", "--transport", "http"]
    command += ["--method", "tools/list"]
    for header in headers:
        command += ["--header", header]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_mcp_inspector_cli_lists_golems_tools(inspector: Path, served: Served) -> None:
    key = served.key("inspected")
    listed = list_tools(inspector, served.url, f"Authorization: Bearer {key}")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)["tools"]
    assert {tool["name"] for tool in tools} == TOOLS
    run_start = next(tool for tool in tools if tool["name"] == "run_start")
    assert "pull request" in run_start["description"]


def test_the_mcp_inspector_cli_without_a_key_lists_nothing(inspector: Path, served: Served) -> None:
    listed = list_tools(inspector, served.url)
    assert listed.returncode != 0
    assert "box_exec" not in listed.stdout
    assert "auth_required" in listed.stderr  # it read the 401's Bearer challenge
