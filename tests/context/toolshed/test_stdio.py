"""A real stdio MCP server (npm's server-everything) run inside a box: its tools listed
once, a step's subset offered under wire names, calls answered; a server that hangs or
dies gives a clear tool error and stays broken for the run."""

from __future__ import annotations

import re

import pytest

from golem.context.toolshed import Toolshed
from golem.core.config import GolemConfig
from golem.core.errors import ToolshedError
from golem.sandbox import Box
from tests.context.toolshed.servers import EVERYTHING, MEMORY, TIME, copy_into, entry
from tests.context.toolshed.sheds import shed_config

pytestmark = pytest.mark.bwrap


@pytest.fixture
async def everything(box: Box) -> str:
    """server-everything copied into the box: its entry script there."""
    return entry(EVERYTHING, await copy_into(box, EVERYTHING))


async def test_a_step_gets_the_tools_its_patterns_choose_and_calls_reach_the_server(
    config: GolemConfig, box: Box, everything: str
) -> None:
    shed = Toolshed(shed_config(config, every={"command": ["node", everything, "stdio"]}))
    try:
        tools = await shed.tools(box, ["every.echo", "every.get-sum", "every.get-tiny-image"])
        names = sorted(tool.spec.name for tool in tools)
        assert names == ["every__echo", "every__get-sum", "every__get-tiny-image"]
        image = await tools[2].run(box, {})
        assert re.search(r"\[image/png, [0-9]+ bytes\]", image.output), image.output
        echo = next(tool for tool in tools if tool.spec.name == "every__echo")
        assert "message" in echo.spec.parameters["properties"]
        result = await echo.run(box, {"message": "hello from golem"})
        assert not result.is_error
        assert "hello from golem" in result.output
        listing = await shed.listing(box, "every")
        assert {"echo", "get-sum", "get-env"} <= {tool.name for tool in listing}
    finally:
        await shed.close()


async def test_a_hanging_call_is_a_tool_error_and_the_server_stays_broken(
    config: GolemConfig, box: Box, everything: str
) -> None:
    server = {"command": ["node", everything, "stdio"], "call_timeout": 1}
    shed = Toolshed(shed_config(config, every=server))
    try:
        tools = {t.spec.name: t for t in await shed.tools(box, ["every.*"])}
        hang = tools["every__trigger-long-running-operation"]
        result = await hang.run(box, {"duration": 600, "steps": 1})
        assert result.is_error
        assert "toolshed server 'every' is unavailable for this run" in result.output
        assert "trigger-long-running-operation" in result.output
        assert "1s" in result.output
        again = await tools["every__echo"].run(box, {"message": "still there?"})
        assert again.is_error
        assert again.output.startswith(result.output.split(";")[0])
        alive = await box.execute(["pgrep", "-f", "index.js"])
        assert alive.exit_code == 1  # the hung server was stopped, not left running
    finally:
        await shed.close()


async def test_a_server_killed_mid_run_is_a_clear_tool_error_with_its_end(
    config: GolemConfig, box: Box, everything: str
) -> None:
    shed = Toolshed(shed_config(config, every={"command": ["node", everything, "stdio"]}))
    try:
        [echo] = await shed.tools(box, ["every.echo"])
        assert not (await echo.run(box, {"message": "one"})).is_error
        killed = await box.execute(["pkill", "-KILL", "-f", "index.js"])
        assert killed.exit_code == 0
        result = await echo.run(box, {"message": "two"})
        assert result.is_error
        assert "toolshed server 'every' is unavailable" in result.output
        assert "the call of echo lost the connection" in result.output
        assert "Starting default (STDIO) server" in result.output  # its stderr's tail
    finally:
        await shed.close()


async def test_a_server_that_cannot_start_says_why_with_its_stderr(
    config: GolemConfig, box: Box
) -> None:
    script = "echo 'no such module: @acme/tracker' >&2; exit 3"
    shed = Toolshed(shed_config(config, bad={"command": ["sh", "-c", script]}))
    with pytest.raises(ToolshedError) as raised:
        await shed.tools(box, ["bad.*"])
    await shed.close()
    assert "toolshed server 'bad' is unavailable for this run" in raised.value.message
    assert "exited with code 3" in raised.value.message
    assert "no such module: @acme/tracker" in raised.value.message


async def test_a_pattern_that_matches_nothing_names_the_servers_tools(
    config: GolemConfig, box: Box, everything: str
) -> None:
    shed = Toolshed(shed_config(config, every={"command": ["node", everything, "stdio"]}))
    try:
        with pytest.raises(ToolshedError, match=r"'every.ech' matches none.*\(.*echo.*get-sum"):
            await shed.tools(box, ["every.ech"])
    finally:
        await shed.close()


async def test_a_server_lives_in_the_box_for_the_run_and_is_listed_once(
    config: GolemConfig, box: Box
) -> None:
    script = entry(MEMORY, await copy_into(box, MEMORY))
    server = {"command": ["node", script], "env": {"MEMORY_FILE_PATH": "/tmp/memory.jsonl"}}
    shed = Toolshed(shed_config(config, memory=server))
    try:
        [create] = await shed.tools(box, ["memory.create_entities"])  # one step
        entity = {"name": "golem", "entityType": "project", "observations": ["runs agents"]}
        created = await create.run(box, {"entities": [entity]})
        [read] = await shed.tools(box, ["memory.read_graph"])  # a later step
        graph = await read.run(box, {})
        first, again = await shed.listing(box, "memory"), await shed.listing(box, "memory")
        kept = await box.get_file("/tmp/memory.jsonl")
    finally:
        await shed.close()
    assert not created.is_error, created.output
    assert '"runs agents"' in graph.output  # the same process, across steps
    assert first is again  # listed once
    assert b'"name":"golem"' in kept  # it wrote inside the box


async def test_a_server_that_never_answers_fails_within_connect_timeout(
    config: GolemConfig, box: Box
) -> None:
    silent = {"command": ["sleep", "600"], "connect_timeout": 1}
    shed = Toolshed(shed_config(config, silent=silent))
    try:
        with pytest.raises(ToolshedError, match=r"did not start and list its tools within 1s"):
            await shed.tools(box, ["silent.*"])
        with pytest.raises(ToolshedError, match="unavailable for this run"):
            await shed.tools(box, ["silent.*"])  # broken: at once, the same reason
        left = await box.execute(["pgrep", "sleep"])
    finally:
        await shed.close()
    assert left.exit_code == 1  # the silent server was stopped


async def test_a_python_server_from_pypi_runs_in_the_box(config: GolemConfig, box: Box) -> None:
    site = await copy_into(box, TIME, pypi=True)
    command = ["python3", "-m", "mcp_server_time", "--local-timezone", "UTC"]
    shed = Toolshed(shed_config(config, time={"command": command, "env": {"PYTHONPATH": site}}))
    try:
        [convert] = await shed.tools(box, ["time.convert_time"])
        arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        result = await convert.run(box, arguments)
    finally:
        await shed.close()
    assert not result.is_error, result.output
    assert '"datetime": "' in result.output
    assert "T21:00:00+09:00" in result.output
