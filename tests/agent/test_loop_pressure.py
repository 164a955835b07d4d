"""The agent loop under a provider's pressure, in a real box against the Anthropic wire
server: every wait before a call is in the trajectory (how long, why, which header said
so) and the call is charged once; an agent that may pause stops ``paused`` when its
provider stays down, saying when the provider expects to be back, and goes on later from
its conversation without counting it again."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.agent import Agent, Resumed, conversation_of
from golem.agent.events import ModelWaited
from golem.agent.models import make_model
from golem.agent.tools import make_tools
from golem.agent.trajectory import read_trajectory
from golem.sandbox import Box, Engine
from golem.testing.anthropic_server import Text, ToolUse, error_reply, stream_reply
from golem.testing.models import AnthropicServer, models_config

pytestmark = pytest.mark.bwrap

EXAMPLES = Path(__file__).parents[2] / "examples"
MODEL = "anthropic/claude-haiku-4-5"
FINISH = ToolUse("finish", {"summary": "done"})


@pytest.fixture
async def repo_box(engine: Engine) -> AsyncIterator[Box]:
    async with engine.session() as box:
        await box.put_dir(EXAMPLES / "calculator", ".")
        yield box


async def test_every_wait_is_in_the_trajectory_and_a_retried_call_is_charged_once(
    repo_box: Box, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.push(
        error_reply(429, "rate_limit_error", "Slow down.", {"retry-after-ms": "200"}),
        stream_reply(FINISH),
    )
    model = make_model(MODEL, models_config(anthropic=anthropic_server))
    trajectory = tmp_path / "run.jsonl"

    outcome = await Agent(model, make_tools(["finish"])).run(
        repo_box, "Do it.", trajectory=trajectory
    )

    waits = [e for e in read_trajectory(trajectory)[0] if isinstance(e, ModelWaited)]
    assert [(w.turn, w.header) for w in waits] == [(1, "retry-after-ms: 200")]
    assert "429" in waits[0].reason
    assert waits[0].seconds >= 0.2
    assert (outcome.status, outcome.turns) == ("done", 1)
    assert model.price is not None
    assert outcome.cost_usd == pytest.approx(
        (10 * model.price.input + 5 * model.price.output) / 1e6
    )


async def test_an_agent_that_may_pause_stops_paused_and_goes_on_from_its_conversation(
    repo_box: Box, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.push(
        stream_reply(Text("Looking."), ToolUse("bash", {"command": "ls"})),
        error_reply(529, "overloaded_error", "Overloaded", {"retry-after": "600"}),
    )
    config = models_config(anthropic=anthropic_server)
    config.unavailable_after = 5
    tools = make_tools(["bash", "finish"])
    events: list[object] = []
    paused = await Agent(
        make_model(MODEL, config), tools, on_event=events.append, pause_when_down=True
    ).run(repo_box, "Do it.")

    assert paused.status == "paused"
    assert "overloaded" in paused.reason.lower()
    assert paused.back_at == pytest.approx(time.time() + 600, abs=60)
    assert paused.turns == 1

    messages, turns = conversation_of(events)  # type: ignore[arg-type]
    anthropic_server.push(stream_reply(FINISH))
    resumed = await Agent(make_model(MODEL, models_config(anthropic=anthropic_server)), tools).run(
        repo_box, "Do it.", resume=Resumed(messages, turns)
    )

    assert (resumed.status, resumed.turns) == ("done", 1)  # the earlier turn is not counted
    went_on = anthropic_server.requests[-1].json["messages"]
    assert [m["role"] for m in went_on] == ["user", "assistant", "user"]
    assert went_on[2]["content"][0]["type"] == "tool_result"
