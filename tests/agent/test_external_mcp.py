"""External CLI agents given a step's tools: golem serves exactly those tools as one MCP
server (its gateway on the host, reached through the box's proxy) and tells the CLI of it
through the CLI's own MCP configuration. A CLI run by golem finds that configuration, lists
exactly the subset and calls a tool; a CLI without MCP support is refused up front."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from golem.agent import (
    AgentEvent,
    AgentStarted,
    Budget,
    ToolFinished,
    ToolStarted,
    make_tools,
)
from golem.agent.external import BUILTINS, ExternalAgent, ExternalTemplate
from golem.agent.external.plan import plan_call
from golem.context.toolshed import Toolshed
from golem.context.toolshed.gateway import tools_for_box
from golem.core import ConfigError
from golem.testing import EventCapture
from golem.testing.anthropic_server import Text, ToolUse, stream_reply
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
from tests.context.mcp_box_client import SCRIPT
from tests.context.toolshed.servers import EVERYTHING, copy_into, entry
from tests.context.toolshed.sheds import shed_config

NOTES = "the step's notes, read through MCP\n"

# A CLI that reads Claude Code's --mcp-config file, lists the server's tools and calls two:
# one of the step's, one it was not given.
FAKE_MCP_CLI = (
    "import json, subprocess, sys\n"
    "config = json.load(open(sys.argv[sys.argv.index('--mcp-config') + 1]))\n"
    "url = config['mcpServers']['golem']['url']\n"
    "def call(method, params):\n"
    "    script = open(sys.argv[0].replace('cli.py', 'client.py')).read()\n"
    "    out = subprocess.run([sys.executable, '-c', script, url, method, json.dumps(params)],\n"
    "                         capture_output=True, text=True).stdout\n"
    "    print(method, out.strip(), flush=True)\n"
    "call('tools/list', {})\n"
    "call('tools/call', {'name': 'read', 'arguments': {'path': 'notes.txt'}})\n"
    "call('tools/call', {'name': 'bash', 'arguments': {'command': 'id'}})\n"
)


def fake_mcp_template(**changes: Any) -> ExternalTemplate:
    claude = BUILTINS["claude"]
    settings: dict[str, Any] = {
        "name": "fake-mcp",
        "argv": ["python3", "{run_dir}/cli.py"],
        "files": {"cli.py": FAKE_MCP_CLI, "client.py": SCRIPT},
        "mcp_args": claude.mcp_args,
        "mcp_files": claude.mcp_files,
        **changes,
    }
    return ExternalTemplate(**settings)


def _answers(events: Iterable[AgentEvent]) -> dict[str, list[str]]:
    answers: dict[str, list[str]] = {}
    for line in lines(events, "stdout"):
        method, _, rest = line.partition(" ")
        answers.setdefault(method, []).append(rest)
    return answers


@pytest.mark.bwrap
async def test_a_cli_finds_its_mcp_config_and_gets_exactly_the_steps_tools(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)])
    events = EventCapture[AgentEvent]()
    async with open_box(config, anthropic_server) as box:
        await box.put_file("/workspace/notes.txt", NOTES)
        agent = ExternalAgent(fake_mcp_template(), on_event=events)
        tools = make_tools(["read", "ls"])
        async with tools_for_box(tools, box) as url:
            outcome = await agent.run(box, "use the tools", mcp_url=url, mcp_tools=["read", "ls"])

    assert outcome.status == "done", outcome.reason
    answers = _answers(events)
    [listed] = answers["tools/list"]
    status, _, body = listed.partition(" ")
    assert status == "200"
    assert sorted(t["name"] for t in json.loads(body)["result"]["tools"]) == ["ls", "read"]
    read, refused = answers["tools/call"]
    assert read.startswith("200 ")
    assert json.loads(NOTES.strip().join(['"', '"'])) in read
    assert "no tool 'bash'" in refused
    assert '"isError":true' in refused.replace(" ", "")
    [command] = lines(events, "golem")
    config_flags = r" --mcp-config /tmp/golem-external/\w+/mcp\.json --strict-mcp-config$"
    assert re.search(config_flags, command)
    started = events.of_type(AgentStarted)
    assert started[0].tools == ["read", "ls"]


async def test_a_cli_without_mcp_support_is_refused_before_it_runs(tmp_path: Path) -> None:
    config = external_config(tmp_path, [])
    async with open_box(config) as box:
        for kind in ("pi", "aider"):
            with pytest.raises(ConfigError, match=f"the {kind} agent takes no MCP"):
                await ExternalAgent(kind).run(box, "task", mcp_url="http://127.0.0.1:1/x")
        plain = fake_mcp_template(mcp_args=[], mcp_files={})
        with pytest.raises(ConfigError, match="choose claude, codex or goose"):
            await ExternalAgent(plain).run(box, "task", mcp_url="http://127.0.0.1:1/x")


def test_the_builtins_that_read_mcp_config_are_claude_codex_and_goose() -> None:
    assert sorted(n for n, t in BUILTINS.items() if t.speaks_mcp) == ["claude", "codex", "goose"]


# Claude Code itself ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def claude_image() -> str:
    return cli_image("claude")


@pytest.mark.docker
@pytest.mark.timeout(900)
async def test_claude_code_lists_and_calls_the_steps_tools_over_mcp(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.push(
        stream_reply(ToolUse("mcp__golem__read", {"path": "notes.txt"})),
        stream_reply(Text("I read the notes.")),
    )
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    events = EventCapture[AgentEvent]()
    async with open_box(config, anthropic_server) as box:
        await box.put_file("/workspace/notes.txt", NOTES)
        agent = ExternalAgent("claude", model="claude-sonnet-4-5", on_event=events)
        async with tools_for_box(make_tools(["read"]), box) as url:
            outcome = await agent.run(box, "Read the notes", mcp_url=url, mcp_tools=["read"])
            network = await box.network_log()

    assert (outcome.status, outcome.summary) == ("done", "I read the notes."), outcome.reason
    init = json.loads(next(line for line in lines(events, "stdout") if '"subtype":"init"' in line))
    assert init["mcp_servers"] == [{"name": "golem", "status": "connected", "source": "dynamic"}]
    mcp = [name for name in init["tools"] if name.startswith("mcp__")]
    assert mcp == ["mcp__golem__read"]  # the step's subset, nothing else from golem
    routed = [event for event in network if event.rule == "golem host route"]
    assert len(routed) >= 3  # initialize, tools/list, tools/call: all through the route
    [started] = events.of_type(ToolStarted)
    assert started.call.name == "mcp__golem__read"
    [finished] = events.of_type(ToolFinished)
    assert not finished.is_error
    assert "read through MCP" in finished.output
    requests = anthropic_server.requests
    assert "read through MCP" in json.dumps(requests[1].json["messages"])
    assert {r.headers["x-api-key"] for r in requests} == {TEST_KEY}


@pytest.mark.docker
@pytest.mark.timeout(900)
async def test_claude_code_gets_a_real_servers_subset_through_the_toolshed(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.push(
        stream_reply(ToolUse("mcp__golem__every__echo", {"message": "hello via the toolshed"})),
        stream_reply(Text("Echoed.")),
    )
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    base = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    events = EventCapture[AgentEvent]()
    async with open_box(base, anthropic_server) as box:
        server = entry(EVERYTHING, await copy_into(box, EVERYTHING))
        shed = Toolshed(shed_config(base, every={"command": ["node", server, "stdio"]}))
        try:
            tools = await shed.tools(box, ["every.echo"])
            agent = ExternalAgent("claude", model="claude-sonnet-4-5", on_event=events)
            async with tools_for_box(tools, box) as url:
                outcome = await agent.run(box, "Echo", mcp_url=url, mcp_tools=["every__echo"])
        finally:
            await shed.close()

    assert (outcome.status, outcome.summary) == ("done", "Echoed."), outcome.reason
    init = json.loads(next(line for line in lines(events, "stdout") if '"subtype":"init"' in line))
    assert [name for name in init["tools"] if name.startswith("mcp__")] == [
        "mcp__golem__every__echo"
    ]
    [finished] = events.of_type(ToolFinished)
    assert not finished.is_error
    assert "Echo: hello via the toolshed" in finished.output


# Codex ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def codex_image() -> str:
    return cli_image("codex")


@pytest.mark.docker
@pytest.mark.timeout(900)
async def test_codex_is_offered_and_calls_the_steps_tools_over_mcp(
    codex_image: str, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.push(
        responses_stream_reply(FunctionCall("read", {"path": "notes.txt"}, namespace="mcp__golem")),
        responses_stream_reply(OutputText("I read the notes.")),
    )
    openai_server.otherwise(responses_stream_reply(OutputText("(an extra request)")))
    config = external_config(tmp_path, [openai_credential(openai_server)], codex_image)
    events = EventCapture[AgentEvent]()
    async with open_box(config, openai_server) as box:
        await box.put_file("/workspace/notes.txt", NOTES)
        agent = ExternalAgent("codex", model="gpt-5-mini", on_event=events)
        async with tools_for_box(make_tools(["read"]), box) as url:
            outcome = await agent.run(box, "Read the notes", mcp_url=url, mcp_tools=["read"])

    assert (outcome.status, outcome.summary) == ("done", "I read the notes."), outcome.reason
    requests = openai_server.requests
    [golem] = [tool for tool in requests[0].json["tools"] if "golem" in tool.get("name", "")]
    assert (golem["type"], golem["name"]) == ("namespace", "mcp__golem")
    assert [tool["name"] for tool in golem["tools"]] == ["read"]  # the subset only
    [started] = events.of_type(ToolStarted)
    assert (started.call.name, started.call.arguments) == ("golem.read", {"path": "notes.txt"})
    [finished] = events.of_type(ToolFinished)
    assert not finished.is_error
    assert "read through MCP" in finished.output
    assert "read through MCP" in json.dumps(requests[1].json["input"])


def test_the_mcp_fields_are_filled_only_when_the_step_has_tools() -> None:
    template = ExternalTemplate(
        name="mine",
        argv=["mine", "--run"],
        mcp_args=["--tools-from", "{run_dir}/tools.json"],
        mcp_env={"MINE_MCP_URL": "{mcp_url}"},
        mcp_files={"tools.json": '{"url": "{mcp_url}"}'},
    )
    url = "http://127.0.0.1:3128/_golem/host-0123456789abcdef"
    given = plan_call(
        template, task="t", prompt="p", model=None, budget=Budget(), run_dir="/r",
        box_env={}, timeout=60, mcp_url=url,
    )  # fmt: skip
    plain = plan_call(
        template, task="t", prompt="p", model=None, budget=Budget(), run_dir="/r",
        box_env={}, timeout=60,
    )  # fmt: skip
    assert given.command == ["mine", "--run", "--tools-from", "/r/tools.json"]
    assert given.env == {"MINE_MCP_URL": url}
    assert given.files["/r/tools.json"] == f'{{"url": "{url}"}}'
    assert plain.command == ["mine", "--run"]
    assert plain.env == {}
    assert set(plain.files) == {"/r/prompt.md"}
