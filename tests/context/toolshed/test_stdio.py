"""A real stdio MCP server (npm's server-everything) run inside a box: its tools listed
once, a step's subset offered under wire names, calls answered; a server that hangs or
dies gives a clear tool error and stays broken for the run."""

from __future__ import annotations

from typing import Any

import pytest

from golem.context.toolshed import Toolshed
from golem.core.config import GolemConfig, load_config
from golem.sandbox import Box
from tests.context.toolshed.servers import EVERYTHING, copy_into, entry

pytestmark = pytest.mark.bwrap


def shed_config(config: GolemConfig, **servers: dict[str, Any]) -> GolemConfig:
    data = config.model_dump(mode="json", exclude_unset=True)
    data["toolshed"] = {"servers": [{"name": name, **s} for name, s in servers.items()]}
    return load_config(data, files=[])


@pytest.fixture
async def everything(box: Box) -> str:
    """server-everything copied into the box: its entry script there."""
    return entry(EVERYTHING, await copy_into(box, EVERYTHING))


async def test_a_step_gets_the_tools_its_patterns_choose_and_calls_reach_the_server(
    config: GolemConfig, box: Box, everything: str
) -> None:
    shed = Toolshed(shed_config(config, every={"command": ["node", everything, "stdio"]}))
    try:
        tools = await shed.tools(box, ["every.echo", "every.get-sum"])
        assert sorted(tool.spec.name for tool in tools) == ["every__echo", "every__get-sum"]
        echo = next(tool for tool in tools if tool.spec.name == "every__echo")
        assert "message" in echo.spec.parameters["properties"]
        result = await echo.run(box, {"message": "hello from golem"})
        assert not result.is_error
        assert "hello from golem" in result.output
        listing = await shed.listing(box, "every")
        assert {"echo", "get-sum", "get-env"} <= {tool.name for tool in listing}
    finally:
        await shed.close()
