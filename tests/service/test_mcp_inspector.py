"""A real MCP client nobody here wrote lists golem's tools: the MCP Inspector's CLI,
installed by the test from the npm registry (cached per version), against a real
`golem serve`'s /mcp with an API key as its bearer header; without the key it gets
nothing."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.context.toolshed.servers import node_at_least, npm_package
from tests.service.mcp_clients import TOOLS
from tests.service.served import Served

INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0")

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="needs node and npm")


@pytest.fixture(scope="session")
def inspector() -> list[str]:
    """The Inspector's launcher, installed once per version, run by a node it accepts (it
    needs node 20; Debian's is 18)."""
    name, _ = INSPECTOR
    root = npm_package(*INSPECTOR)
    launcher = root / "node_modules" / name / "clients" / "launcher" / "build" / "index.js"
    return [node_at_least(20), str(launcher)]


def list_tools(inspector: list[str], url: str, *headers: str) -> subprocess.CompletedProcess[str]:
    """`mcp-inspector --cli URL --transport http --method tools/list [--header ...]`."""
    command = [*inspector, "--cli", f"{url}/mcp", "--transport", "http"]
    command += ["--method", "tools/list"]
    for header in headers:
        command += ["--header", header]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_mcp_inspector_cli_lists_golems_tools(inspector: list[str], served: Served) -> None:
    key = served.tenant_key("inspected")
    listed = list_tools(inspector, served.url, f"Authorization: Bearer {key}")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)["tools"]
    assert {tool["name"] for tool in tools} == TOOLS
    run_start = next(tool for tool in tools if tool["name"] == "run_start")
    assert "pull request" in run_start["description"]


def test_the_mcp_inspector_cli_without_a_key_lists_nothing(
    inspector: list[str], served: Served
) -> None:
    listed = list_tools(inspector, served.url)
    assert listed.returncode != 0
    assert "box_exec" not in listed.stdout
    assert "auth_required" in listed.stderr  # it read the 401's Bearer challenge
