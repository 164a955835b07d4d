"""The real external CLI agents in real boxes: Claude Code, Codex, pi and aider in filtered
docker boxes, reaching the loopback wire servers only through golem's credential route,
never holding the real key. Templates, golem's own limits and unfit boxes are tested in
test_external_template.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from golem.agent import (
    AgentEvent,
    AgentFinished,
    AgentStarted,
    Budget,
    ExternalOutput,
    ModelAnswered,
    ToolFinished,
    ToolStarted,
    read_trajectory,
)
from golem.agent.external import ExternalAgent
from golem.sandbox import Box
from golem.testing import EventCapture
from golem.testing.anthropic_server import AnthropicUsage, Text, ToolUse, stream_reply
from golem.testing.models import TEST_KEY, AnthropicServer, OpenAIServer
from golem.testing.openai_responses import FunctionCall, OutputText, responses_stream_reply
from tests.agent.external_support import (
    anthropic_credential,
    cli_image,
    external_config,
    lines,
    open_box,
    openai_credential,
)
from tests.traces import SCAN, traces_in_box

BUILD_TIMEOUT = 900
"""Seconds for a test that may build a CLI image first (npm or pip installs)."""


async def assert_no_trace_of_the_key(box: Box, events: Iterable[AgentEvent], path: Path) -> None:
    """The real key is in no process environment or command line, file, event or line of
    output of the box, nor in the trajectory; the box holds a sentinel instead."""
    assert await traces_in_box(box, TEST_KEY) == []
    env = await box.execute("env")
    assert TEST_KEY not in env.stdout_text
    assert re.search(r"^\w+_API_KEY=golem-sentinel-", env.stdout_text, re.MULTILINE)
    assert all(TEST_KEY not in e.model_dump_json() for e in events)
    assert TEST_KEY not in path.read_text()


# The real CLIs ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def claude_image() -> str:
    return cli_image("claude")


@pytest.fixture(scope="session")
def codex_image() -> str:
    return cli_image("codex")


@pytest.fixture(scope="session")
def pi_image() -> str:
    return cli_image("pi")


@pytest.fixture(scope="session")
def aider_image() -> str:
    return cli_image("aider")


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_claude_code_works_in_the_box_through_the_proxy_and_never_sees_the_key(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    scan = {"command": f"python3 /tmp/scan.py {TEST_KEY[::-1]}", "description": "scan"}
    write = {"file_path": "/workspace/hello.txt", "content": "hello from claude\n"}
    anthropic_server.push(
        stream_reply(Text("Checking the sandbox first."), ToolUse("Bash", scan)),
        stream_reply(ToolUse("Write", write)),
        stream_reply(Text("I wrote hello.txt.")),
    )
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    events = EventCapture[AgentEvent]()
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        await box.put_file("/tmp/scan.py", SCAN)
        agent = ExternalAgent(
            "claude", model="claude-sonnet-4-5", budget=Budget(turns=7), on_event=events
        )
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hello from claude\n"
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert (outcome.status, outcome.summary, outcome.turns) == ("done", "I wrote hello.txt.", 3)
    assert outcome.cost_usd > 0
    assert outcome.usage.input_tokens > 0
    [command] = lines(events, "golem")
    assert command.startswith("$ claude --print --output-format stream-json")
    assert command.endswith("--model claude-sonnet-4-5 --max-turns 7")
    assert [type(e) for e in events if not isinstance(e, ExternalOutput)] == [
        AgentStarted, ModelAnswered, ModelAnswered, ToolStarted, ToolFinished, ModelAnswered,
        ToolStarted, ToolFinished, ModelAnswered, AgentFinished,
    ]  # fmt: skip
    started = events.of_type(ToolStarted)
    assert [(s.call.name, s.call.arguments) for s in started] == [("Bash", scan), ("Write", write)]
    finished = events.of_type(ToolFinished)
    assert finished[0].output == "[]"  # the scan, run by Claude Code itself, found nothing
    assert not any(f.is_error for f in finished)
    answers = events.of_type(ModelAnswered)  # one per content block, as Claude Code prints
    assert [a.turn for a in answers] == [1, 1, 2, 3]
    assert answers[0].response.message.content == "Checking the sandbox first."
    assert [c.name for c in answers[1].response.message.tool_calls] == ["Bash"]
    assert answers[0].response.model == "claude-sonnet-4-5-20250929"
    assert answers[1].response.usage.input_tokens == 0  # the message's usage came with block 1

    requests = anthropic_server.requests
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/messages?beta=true")] * 3
    assert {r.headers["x-api-key"] for r in requests} == {TEST_KEY}
    first = json.dumps(requests[0].json["messages"])
    assert "Write hello.txt" in first
    assert "Do not commit, push or create branches" in first

    recorded, notes = read_trajectory(trajectory)
    assert [type(e) for e in recorded] == [type(e) for e in events]  # raw lines included
    assert notes == []


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_claude_code_stops_at_the_turn_budget(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.otherwise(stream_reply(ToolUse("Bash", {"command": "true"})))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    async with open_box(config, anthropic_server) as box:
        outcome = await ExternalAgent("claude", budget=Budget(turns=2)).run(box, "Loop")
    assert outcome.status == "budget_spent"
    assert "turn limit" in outcome.reason
    assert len(anthropic_server.requests) == 2


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_claude_code_holds_the_dollar_budget_after_each_call(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    """Claude Code checks --max-budget-usd after each call: the call that crosses the
    budget is the last, and the outcome says it went over."""
    usage = AnthropicUsage(input_tokens=1000, output_tokens=1000)  # $0.018 a call at sonnet's
    anthropic_server.otherwise(stream_reply(ToolUse("Bash", {"command": "true"}), usage=usage))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    agent = ExternalAgent("claude", model="claude-sonnet-4-5", budget=Budget(usd=0.02))
    async with open_box(config, anthropic_server) as box:
        outcome = await agent.run(box, "Loop")
    assert outcome.status == "budget_spent"
    assert outcome.reason.startswith("Claude Code hit its dollar limit; it spent $0.0360, more")
    assert (outcome.turns, outcome.cost_usd) == (2, pytest.approx(0.036))
    assert outcome.usage.input_tokens == outcome.usage.output_tokens == 2000
    assert len(anthropic_server.requests) == 2


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_codex_works_in_the_box_through_the_responses_api(
    codex_image: str, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    command = "echo hello from codex > hello.txt"
    openai_server.push(
        responses_stream_reply(
            OutputText("Writing it."), FunctionCall("exec_command", {"cmd": command})
        ),
        responses_stream_reply(OutputText("I wrote hello.txt.")),
    )
    config = external_config(tmp_path, [openai_credential(openai_server)], codex_image)
    events = EventCapture[AgentEvent]()
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, openai_server) as box:
        agent = ExternalAgent("codex", model="gpt-5-mini", on_event=events)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hello from codex\n"
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert (outcome.status, outcome.summary, outcome.turns) == ("done", "I wrote hello.txt.", 2)
    assert outcome.usage.input_tokens == 20
    assert outcome.cost_usd > 0  # codex reports tokens only: priced by golem's table
    [started] = events.of_type(ToolStarted)
    assert started.call.name == "command_execution"
    assert command in started.call.arguments["command"]
    [finished] = events.of_type(ToolFinished)
    assert not finished.is_error
    texts = [a.response.message.content for a in events.of_type(ModelAnswered)]
    assert texts == ["Writing it.", "I wrote hello.txt."]
    requests = openai_server.requests
    assert [(r.method, r.path) for r in requests] == [("POST", "/v1/responses")] * 2
    assert {r.headers["authorization"] for r in requests} == {f"Bearer {TEST_KEY}"}
    assert "Write hello.txt" in json.dumps(requests[0].json["input"])
    assert [e for e in lines(events, "golem") if "refused" in e] == []


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_pi_works_in_the_box_through_the_proxy(
    pi_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.push(
        stream_reply(Text("Writing."), ToolUse("write", {"path": "hello.txt", "content": "hi\n"})),
        stream_reply(Text("I wrote hello.txt.")),
    )
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], pi_image)
    events = EventCapture[AgentEvent]()
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        agent = ExternalAgent("pi", model="claude-sonnet-4-5", on_event=events)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hi\n"
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert (outcome.status, outcome.summary, outcome.turns) == ("done", "I wrote hello.txt.", 2)
    assert outcome.cost_usd > 0  # pi's own price for the tokens
    assert [s.call.name for s in events.of_type(ToolStarted)] == ["write"]
    assert [f.output for f in events.of_type(ToolFinished)] == [
        "Successfully wrote 3 bytes to hello.txt"
    ]
    stdout = lines(events, "stdout")
    assert not [line for line in stdout if '"type":"message_update"' in line]  # dropped in the box
    assert any('"type":"agent_end"' in line for line in stdout)
    assert {r.headers["x-api-key"] for r in anthropic_server.requests} == {TEST_KEY}
    assert len(anthropic_server.requests) == 2
    assert [e for e in lines(events, "golem") if "refused" in e] == []


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_golem_stops_pi_when_its_turns_are_used_up(
    pi_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    """pi has no turn limit of its own: golem kills it once the tools of its last allowed
    reply have run. pi may have sent its next request by the time the kill lands."""
    anthropic_server.otherwise(stream_reply(ToolUse("bash", {"command": "true"})))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], pi_image)
    async with open_box(config, anthropic_server) as box:
        outcome = await ExternalAgent("pi", budget=Budget(turns=1)).run(box, "Loop")
    assert (outcome.status, outcome.turns) == ("budget_spent", 1)
    assert outcome.reason == "turn budget of 1 model calls used; golem stopped pi"
    assert len(anthropic_server.requests) in (1, 2)


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_aider_edits_a_file_in_the_box_through_the_proxy(
    aider_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    edit = (
        "Creating it.\n\nhello.txt\n```\n<<<<<<< SEARCH\n=======\nhello from aider\n"
        ">>>>>>> REPLACE\n```\n"
    )
    anthropic_server.push(stream_reply(Text(edit)))
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], aider_image)
    events = EventCapture[AgentEvent]()
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        agent = ExternalAgent("aider", model="anthropic/claude-sonnet-4-5", on_event=events)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hello from aider\n"
        listing = await box.execute("ls -A /workspace")
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert listing.stdout_text == "hello.txt\n"  # aider's history files went to its run directory
    assert outcome.status == "done"
    assert "Applied edit to hello.txt" in outcome.summary
    assert outcome.turns == 1
    assert outcome.cost_usd > 0  # from aider's "Cost: $... session" line
    assert outcome.usage.output_tokens > 0
    assert {r.headers["x-api-key"] for r in anthropic_server.requests} == {TEST_KEY}
    assert len(anthropic_server.requests) == 1
    refused = [e for e in lines(events, "golem") if "refused" in e]
    assert [e.split()[3] for e in refused] == ["raw.githubusercontent.com:443"]  # model info
