"""A scripted agent with toolshed tools in a real box: the step's subset is what the model
is offered, a call reaches the real server (npm's server-everything, stdio in the box) and
its answer the trajectory; a tool outside the subset is refused; a server that dies is a
tool error and the agent goes on to finish."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from golem.agent import Agent, Budget
from golem.agent.events import AgentStarted, ToolFinished
from golem.agent.models import ScriptedModel
from golem.agent.tools import make_tools
from golem.agent.trajectory import read_trajectory
from golem.context.toolshed import Toolshed
from golem.core.config import GolemConfig
from golem.sandbox import Box
from tests.context.toolshed.servers import EVERYTHING, copy_into, entry
from tests.context.toolshed.sheds import shed_config

pytestmark = pytest.mark.bwrap


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def scripted(tmp_path: Path, turns: list[dict[str, Any]]) -> ScriptedModel:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"turns": turns}))
    return ScriptedModel.from_file(path)


async def test_the_agent_calls_its_subset_and_nothing_else(
    config: GolemConfig, box: Box, tmp_path: Path
) -> None:
    script = entry(EVERYTHING, await copy_into(box, EVERYTHING))
    shed = Toolshed(shed_config(config, every={"command": ["node", script, "stdio"]}))
    model = scripted(
        tmp_path,
        [
            call("every__echo", message="toolshed says hi"),
            call("every__get-env"),
            call("bash", command="pkill -KILL -f index.js"),
            call("every__get-sum", a=2, b=3),
            call("finish", summary="done"),
        ],
    )
    try:
        tools = [
            *make_tools(["bash", "finish"]),
            *await shed.tools(box, ["every.echo", "every.get-su*"]),
        ]
        agent = Agent(model, tools, budget=Budget(turns=10))
        trajectory = tmp_path / "trajectory.jsonl"
        outcome = await agent.run(box, "use the toolshed", trajectory=trajectory)
    finally:
        await shed.close()
    assert outcome.status == "done"
    events, _ = read_trajectory(trajectory)
    [started] = [e for e in events if isinstance(e, AgentStarted)]
    assert sorted(started.tools) == ["bash", "every__echo", "every__get-sum", "finish"]
    results = {e.name: e for e in events if isinstance(e, ToolFinished)}
    assert results["every__echo"].output == "Echo: toolshed says hi"
    assert not results["every__echo"].is_error
    refused = results["every__get-env"]
    assert refused.is_error
    assert "there is no tool 'every__get-env'" in refused.output
    dead = results["every__get-sum"]
    assert dead.is_error
    assert "toolshed server 'every' is unavailable for this run" in dead.output
