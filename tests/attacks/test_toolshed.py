"""A hostile MCP server cannot hurt the run through the toolshed: a huge result is clipped,
tool names with path or shell characters (or that collide) become distinct wire-safe
names that still call the server's own tool, thousands of tools are refused or cost the
step its start (never the context), and a brokered credential the server echoes is masked
while the box never holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from golem.agent.messages import ToolSpec
from golem.context.toolshed import Toolshed, ToolshedTool, fit_context, schema_tokens
from golem.context.toolshed.selection import WIRE_NAME_LIMIT
from golem.core.config import GolemConfig
from golem.core.errors import ToolshedError
from golem.sandbox import Box, Engine
from tests.context.toolshed.servers import everything_over_http, recording_proxy
from tests.context.toolshed.sheds import TOKEN, allowing, http_config, shed_config

pytestmark = pytest.mark.bwrap

EVIL = Path(__file__).parent / "toolshed_servers" / "evil_mcp.py"


async def evil(config: GolemConfig, box: Box, *args: str, **server: Any) -> Toolshed:
    await box.put_file("/tmp/evil_mcp.py", EVIL.read_bytes())
    command = ["python3", "/tmp/evil_mcp.py", *args]
    return Toolshed(shed_config(config, evil={"command": command, **server}))


async def test_a_huge_result_is_clipped_to_max_result_bytes(config: GolemConfig, box: Box) -> None:
    shed = await evil(config, box, "huge", str(3 * 1024**2), max_result_bytes="16KiB")
    try:
        [tool] = await shed.tools(box, ["evil.ok"])
        result = await tool.run(box, {"q": "all of it"})
    finally:
        await shed.close()
    assert len(result.output.encode()) < 17 * 1024
    assert result.output.startswith("A" * 1000)
    assert "[clipped: the result was 3145728 bytes; this server's max_result_bytes is 16384]" in (
        result.output
    )


async def test_output_past_the_boxs_cap_is_an_error_and_the_server_starts_afresh(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session({"max_output_bytes": "1MiB"}) as box:
        shed = await evil(config, box, "huge", str(700 * 1024))
        try:
            [tool] = await shed.tools(box, ["evil.ok"])
            first = await tool.run(box, {"q": "one"})
            second = await tool.run(box, {"q": "two"})
            third = await tool.run(box, {"q": "three"})
        finally:
            await shed.close()
    assert not first.is_error
    assert second.is_error
    assert "reached the box's max_output_bytes (1048576 bytes" in second.output
    assert "raise the blueprint's box.max_output_bytes" in second.output
    assert not third.is_error  # a new process, within the cap again
    assert third.output.startswith("AAAA")


async def test_hostile_tool_names_become_distinct_wire_safe_names(
    config: GolemConfig, box: Box
) -> None:
    shed = await evil(config, box, "names")
    try:
        tools = await shed.tools(box, ["evil.*"])
        names = [tool.spec.name for tool in tools]
        assert len(set(names)) == len(names) == 8
        for name in names:
            assert len(name) <= WIRE_NAME_LIMIT
            assert name.replace("_", "").replace("-", "").isalnum()
        assert "evil__a_b" in names  # a.b or a_b: the other one is made unique
        [passwd] = [
            t for t in tools if isinstance(t, ToolshedTool) and t.tool == "../../etc/passwd"
        ]
        assert passwd.spec.name.startswith("evil________etc_passwd_")
        answered = await passwd.run(box, {"q": "x"})
    finally:
        await shed.close()
    assert answered.output == "called '../../etc/passwd'"  # the server's own name


async def test_thousands_of_tools_cost_the_step_its_start_not_the_context(
    config: GolemConfig, box: Box
) -> None:
    shed = await evil(config, box, "many", "3000")
    try:
        tools = await shed.tools(box, ["evil.*"])
    finally:
        await shed.close()
    assert len(tools) == 3000
    specs: list[ToolSpec] = [tool.spec for tool in tools]
    assert schema_tokens(specs) > 12_000
    with pytest.raises(ToolshedError, match=r"schemas take about .* narrow the step's toolshed"):
        fit_context("the rule files", specs, 12_000)
    assert fit_context("the rule files\n" * 2000, specs[:3], 2_000).count("\n") < 2000


async def test_a_listing_that_never_ends_is_refused(config: GolemConfig, box: Box) -> None:
    shed = await evil(config, box, "many", "100000")
    try:
        with pytest.raises(ToolshedError, match="lists more than 5000 tools"):
            await shed.tools(box, ["evil.*"])
    finally:
        await shed.close()


async def test_a_server_echoing_the_credential_shows_it_masked_and_the_box_never_has_it(
    config: GolemConfig, engine: Engine
) -> None:
    with everything_over_http() as port:
        async with recording_proxy(port) as proxy:
            url = f"http://127.0.0.1:{proxy.port}/mcp"
            shed = Toolshed(http_config(config, url, credential="tracker"))
            async with engine.session(allowing(proxy.port)) as box:
                try:
                    tools = {t.spec.name: t for t in await shed.tools(box, ["every.*"])}
                    echoed = await tools["every__echo"].run(box, {"message": TOKEN})
                    env = await tools["every__get-env"].run(box, {})
                    seen = await box.execute("env; grep -rs . /tmp /workspace || true")
                finally:
                    await shed.close()
    assert echoed.output == "Echo: ***"
    assert TOKEN not in env.output
    assert TOKEN.encode() not in seen.stdout
