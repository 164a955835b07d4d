"""The agent loop in real boxes: it fixes the example repository, its budgets stop it at
their limits and never past, loops are caught, failures become observations, every step is
in the trajectory, and the model's key never reaches the box."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from golem.agent import Agent, AgentEvent, Budget, ToolResult, ToolSpec
from golem.agent.events import ModelAnswered, ModelCalled, ToolFinished
from golem.agent.models import ScriptedModel, make_model
from golem.agent.tools import make_tools
from golem.agent.trajectory import read_trajectory
from golem.core import ConfigError
from golem.sandbox import Box, Engine
from golem.testing.anthropic_server import AnthropicUsage, Text, ToolUse, stream_reply
from golem.testing.models import ANTHROPIC_KEY_ENV, TEST_KEY, AnthropicServer, models_config

pytestmark = pytest.mark.bwrap

EXAMPLES = Path(__file__).parents[2] / "examples"
TOOLS = ["read", "edit", "bash", "finish"]


def script(tmp_path: Path, turns: list[dict[str, Any]], **top: Any) -> ScriptedModel:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"turns": turns, **top}))
    return ScriptedModel.from_file(path)


def bash(command: str, tokens: tuple[int, int] = (100, 10)) -> dict[str, Any]:
    return {
        "tool_calls": [{"name": "bash", "arguments": {"command": command}}],
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }


def finish(summary: str = "done") -> dict[str, Any]:
    return {"tool_calls": [{"name": "finish", "arguments": {"summary": summary}}]}


@pytest.fixture
async def repo_box(engine: Engine) -> Box:  # type: ignore[misc]
    async with engine.session() as box:
        await box.put_dir(EXAMPLES / "calculator", ".")
        yield box


async def test_the_scripted_example_fixes_the_calculator_in_a_box(
    repo_box: Box, tmp_path: Path
) -> None:
    before = await repo_box.execute("python3 -m unittest")
    assert before.exit_code != 0
    model = make_model(f"scripted:{EXAMPLES / 'calculator-fix.yaml'}")
    outcome = await Agent(model, make_tools(TOOLS)).run(
        repo_box, "Fix the failing tests", trajectory=tmp_path / "run.jsonl"
    )
    assert (outcome.status, outcome.turns) == ("done", 5)
    assert "now adds" in outcome.summary
    after = await repo_box.execute("python3 -m unittest")
    assert after.exit_code == 0, after.stderr_text
    assert outcome.cost_usd == pytest.approx((15700 * 3 + 210 * 15) / 1e6)


async def test_the_turn_budget_stops_the_loop_at_its_limit(repo_box: Box, tmp_path: Path) -> None:
    model = script(tmp_path, [bash("echo again")] * 10)
    outcome = await Agent(model, make_tools(TOOLS), budget=Budget(turns=3)).run(repo_box, "t")
    assert (outcome.status, outcome.turns, model.turns_left) == ("budget_spent", 3, 7)
    assert "turn budget of 3" in outcome.reason


async def test_the_output_token_budget_is_never_crossed(repo_box: Box, tmp_path: Path) -> None:
    model = script(tmp_path, [bash("true", (100, 300))] * 10)
    budget = Budget(turns=None, output_tokens=1000)
    outcome = await Agent(model, make_tools(TOOLS), budget=budget, max_tokens=300).run(
        repo_box, "t"
    )
    assert outcome.status == "budget_spent"
    assert outcome.usage.output_tokens == 900  # a 4th call could have gone to 1200
    assert "output-token budget" in outcome.reason


async def test_the_input_token_budget_is_never_crossed(repo_box: Box, tmp_path: Path) -> None:
    model = script(tmp_path, [bash("true", (6000, 10))] * 10)
    budget = Budget(turns=None, input_tokens=20000)
    outcome = await Agent(model, make_tools(TOOLS), budget=budget).run(repo_box, "t")
    assert outcome.status == "budget_spent"
    assert outcome.usage.input_tokens == 18000
    assert "input-token budget" in outcome.reason


async def test_a_call_that_could_cross_the_dollar_budget_is_not_made(
    anthropic_server: AnthropicServer, repo_box: Box
) -> None:
    """Each call reads 20k tokens at $1/M (haiku) and may write 8192 at $5/M: with $0.10,
    the loop makes the calls whose worst case fits, then stops, having spent less."""
    for _ in range(10):
        anthropic_server.push(
            stream_reply(
                ToolUse("bash", {"command": "true"}), usage=AnthropicUsage(input_tokens=20000)
            )
        )
    model = make_model("anthropic/claude-haiku-4-5", models_config(anthropic=anthropic_server))
    budget = Budget(turns=None, usd=0.10)
    outcome = await Agent(model, make_tools(TOOLS), budget=budget).run(repo_box, "t")
    assert outcome.status == "budget_spent"
    assert outcome.cost_usd <= 0.10
    assert len(anthropic_server.requests) == outcome.turns < 10
    worst = [r.json["max_tokens"] for r in anthropic_server.requests]
    assert worst[-1] <= worst[0]  # the cap shrinks as the money runs out
    assert "dollar budget" in outcome.reason


def test_a_dollar_budget_needs_a_priced_model(tmp_path: Path) -> None:
    model = script(tmp_path, [finish()])
    with pytest.raises(ConfigError, match=r"\[models.prices\]"):
        Agent(model, make_tools(TOOLS), budget=Budget(usd=1.0))


async def test_the_wall_clock_budget_stops_a_hanging_model(
    anthropic_server: AnthropicServer, repo_box: Box
) -> None:
    anthropic_server.push(stream_reply(Text("thinking forever"), hold_after=1))
    model = make_model("anthropic/claude-haiku-4-5", models_config(anthropic=anthropic_server))
    budget = Budget(wall_seconds=1.5)
    try:
        outcome = await Agent(model, make_tools(TOOLS), budget=budget).run(repo_box, "t")
    finally:
        anthropic_server.release.set()
    assert outcome.status == "budget_spent"
    assert "wall-clock budget of 1.5s" in outcome.reason


async def test_the_wall_clock_budget_stops_a_tool_and_its_process(
    repo_box: Box, tmp_path: Path
) -> None:
    model = script(tmp_path, [bash("touch started; sleep 60; touch finished")])
    outcome = await Agent(model, make_tools(TOOLS), budget=Budget(wall_seconds=2)).run(
        repo_box, "t"
    )
    assert outcome.status == "budget_spent"
    # A killed sleep may still be a zombie until pid 1 reaps it; no live one may be left.
    live_sleep = "cat /proc/[0-9]*/stat 2>/dev/null | grep '(sleep) [^Z]' || echo gone"
    left = await repo_box.execute(f"ls started finished; {live_sleep}")
    assert "gone" in left.stdout_text
    assert "No such file" in left.stderr_text  # finished was never made


async def test_a_model_repeating_a_failing_action_is_stopped_as_stuck(
    repo_box: Box, tmp_path: Path
) -> None:
    model = script(tmp_path, [bash("false")] * 6)
    outcome = await Agent(model, make_tools(TOOLS), stuck_after=3).run(repo_box, "t")
    assert (outcome.status, outcome.turns, model.turns_left) == ("stuck", 3, 3)
    assert "the same failing bash call was made 3 times" in outcome.reason


async def test_a_repeated_action_that_succeeds_is_not_stuck(repo_box: Box, tmp_path: Path) -> None:
    model = script(tmp_path, [bash("true")] * 4 + [finish()])
    outcome = await Agent(model, make_tools(TOOLS), stuck_after=3).run(repo_box, "t")
    assert outcome.status == "done"


class Exploding:
    """A tool whose implementation raises, as a buggy tool would."""

    spec = ToolSpec(name="explode", description="Raises.", parameters={"type": "object"})

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        raise RuntimeError("the tool broke")


async def test_tool_failures_become_observations_not_crashes(repo_box: Box, tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "explode", "arguments": {}}]},
        {"tool_calls": [{"name": "nosuchtool", "arguments": {}}]},
        {"tool_calls": [{"name": "bash", "arguments": "{not json"}]},
        {"tool_calls": [{"name": "read", "arguments": {"path": "missing.py"}}]},
        finish(),
    ]
    events: list[AgentEvent] = []
    agent = Agent(
        script(tmp_path, turns), [*make_tools(TOOLS), Exploding()], on_event=events.append
    )
    outcome = await agent.run(repo_box, "t")
    assert outcome.status == "done"
    results = [e for e in events if isinstance(e, ToolFinished)]
    assert [r.is_error for r in results] == [True, True, True, True, False]
    assert "RuntimeError: the tool broke" in results[0].output
    assert "there is no tool 'nosuchtool'" in results[1].output
    assert "not valid JSON" in results[2].output


async def test_a_reply_without_tools_is_nudged_once_then_taken_as_done(
    repo_box: Box, tmp_path: Path
) -> None:
    model = script(tmp_path, [{"text": "All good."}, {"text": "Really, all good."}])
    events: list[AgentEvent] = []
    outcome = await Agent(model, make_tools(TOOLS), on_event=events.append).run(repo_box, "t")
    assert (outcome.status, outcome.summary) == ("done", "Really, all good.")
    second = [e for e in events if isinstance(e, ModelCalled)][1]
    assert "call finish" in second.new_messages[-1].content


async def test_a_refusal_or_a_failing_model_ends_the_run_as_an_error(
    repo_box: Box, tmp_path: Path
) -> None:
    refused = script(tmp_path, [{"text": "I can't help with that.", "stop_reason": "refusal"}])
    outcome = await Agent(refused, make_tools(TOOLS)).run(repo_box, "t")
    assert (outcome.status, outcome.reason) == (
        "error",
        "the model refused: I can't help with that.",
    )
    ended = script(tmp_path, [bash("true")])
    outcome = await Agent(ended, make_tools(TOOLS)).run(repo_box, "t")
    assert outcome.status == "error"
    assert "the script ended after 1 turns" in outcome.reason


async def test_the_trajectory_holds_every_step_and_replays_to_the_same_outcome(
    engine: Engine, tmp_path: Path
) -> None:
    recorded = tmp_path / "run.jsonl"
    async with engine.session() as box:
        await box.put_dir(EXAMPLES / "calculator", ".")
        model = make_model(f"scripted:{EXAMPLES / 'calculator-fix.yaml'}")
        first = await Agent(model, make_tools(TOOLS)).run(box, "fix it", trajectory=recorded)
    events, notes = read_trajectory(recorded)
    kinds = [e.type for e in events]
    assert notes == []
    assert kinds[0] == "agent_start"
    assert kinds[-1] == "agent_outcome"
    assert kinds.count("model_request") == kinds.count("model_response") == 5
    assert kinds.count("tool_call") == kinds.count("tool_result") == 5
    answered = [e for e in events if isinstance(e, ModelAnswered)]
    assert answered[2].response.message.tool_calls[0].name == "edit"
    async with engine.session() as box:
        await box.put_dir(EXAMPLES / "calculator", ".")
        again = await Agent(make_model(f"scripted:{recorded}"), make_tools(TOOLS)).run(
            box, "fix it"
        )
        assert (await box.execute("python3 -m unittest")).exit_code == 0
    assert (again.status, again.turns, again.summary) == (first.status, 5, first.summary)


async def test_the_model_key_is_in_no_box_env_file_or_output(
    anthropic_server: AnthropicServer, repo_box: Box, tmp_path: Path
) -> None:
    """The loop runs on the host: the SDK holds the key; the box only runs tool calls."""
    probe = (
        "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; "
        "grep -rl --exclude-dir=proc -e sk-golem / 2>/dev/null; echo probe-done"
    )
    anthropic_server.push(stream_reply(ToolUse("bash", {"command": probe})))
    anthropic_server.push(stream_reply(ToolUse("finish", {"summary": "ok"})))
    model = make_model("anthropic/claude-haiku-4-5", models_config(anthropic=anthropic_server))
    events: list[AgentEvent] = []
    outcome = await Agent(model, make_tools(TOOLS), on_event=events.append).run(
        repo_box, "look around", trajectory=tmp_path / "t.jsonl"
    )
    assert outcome.status == "done"
    [observed] = [e.output for e in events if isinstance(e, ToolFinished) and e.name == "bash"]
    assert "probe-done" in observed
    assert TEST_KEY not in observed
    assert TEST_KEY not in (tmp_path / "t.jsonl").read_text()
    assert anthropic_server.requests[0].headers.get("authorization", "").endswith(TEST_KEY) or (
        anthropic_server.requests[0].headers.get("x-api-key") == TEST_KEY
    )
    assert ANTHROPIC_KEY_ENV not in observed


def test_the_example_script_is_valid_and_priced() -> None:
    data = yaml.safe_load((EXAMPLES / "calculator-fix.yaml").read_text())
    assert data["turns"][-1]["tool_calls"][0]["name"] == "finish"
    assert json.dumps(data)  # plain data only
    assert shutil.which("python3")
