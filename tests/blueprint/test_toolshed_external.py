"""A blueprint that gives an external CLI agent toolshed tools is checked when its run is
submitted: the CLI must read MCP configuration (claude, codex, goose), or the run is
refused, naming the step, before anything is cloned or started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState, parse_blueprint
from golem.blueprint.book import RunBook
from golem.blueprint.steps.agent import check_toolshed
from golem.core import ConfigError, load_config
from golem.sandbox import LocalEngine
from golem.store import SqlStore
from golem.testing.anthropic_server import Text, ToolUse, stream_reply
from golem.testing.models import ANTHROPIC_KEY_ENV, TEST_KEY, AnthropicServer
from tests.agent.external_support import anthropic_credential, cli_image
from tests.blueprint.repos import make_remote
from tests.context.toolshed.servers import everything_over_http, recording_proxy
from tests.context.toolshed.sheds import TOKEN

BLUEPRINT = """
name: tools-for-a-cli
nodes:
  - id: implement
    kind: agent
    external: {cli}
    prompt: "{{{{ task }}}}"
    toolshed: [every.echo]
    next: end
"""
SHED = {"toolshed": {"servers": [{"name": "every", "url": "http://x/"}]}}


@pytest.mark.parametrize("cli", ["pi", "aider"])
def test_a_cli_without_mcp_support_is_refused_with_the_step_named(cli: str) -> None:
    config = load_config(SHED, files=[])
    blueprint = parse_blueprint(BLUEPRINT.format(cli=cli))
    with pytest.raises(ConfigError) as refused:
        check_toolshed(blueprint, config)
    assert "step implement" in refused.value.message
    assert f"the {cli} agent takes no MCP configuration" in refused.value.message


@pytest.mark.parametrize("cli", ["claude", "codex", "goose"])
def test_a_cli_that_reads_mcp_config_may_be_given_toolshed_tools(cli: str) -> None:
    config = load_config(SHED, files=[])
    check_toolshed(parse_blueprint(BLUEPRINT.format(cli=cli)), config)


# A whole run -----------------------------------------------------------------------------

RUN_BLUEPRINT = """
name: claude-with-tools
box:
  network: filtered
  memory: 2g
  pids: 1024
  egress: {{allow_cidrs: ["127.0.0.1/32"], ports: [{ports}]}}
nodes:
  - id: prepare
    kind: host
    action: prepare
    next: implement
  - id: implement
    kind: agent
    external: claude
    prompt: "{{{{ task }}}}"
    toolshed: [every.echo]
    next: end
"""


@pytest.fixture(scope="session")
def claude_image() -> str:
    return cli_image("claude")


@pytest.mark.docker
@pytest.mark.timeout(900)
async def test_a_runs_claude_step_calls_its_toolshed_tool_and_the_result_reaches_the_trajectory(
    claude_image: str, monkeypatch: pytest.MonkeyPatch, reachable_dir: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as anthropic_server, everything_over_http() as port:
        async with recording_proxy(port) as tracker:  # sees what reaches the server
            state, store_text = await _run_with_tools(
                anthropic_server, tracker.port, claude_image, reachable_dir, tmp_path
            )
        model_saw = json.dumps([request.json for request in anthropic_server.requests])

    assert state.status == "succeeded", state.error
    [trajectory] = state.trajectories
    recorded = Path(trajectory).read_text()
    events = [json.loads(line) for line in recorded.splitlines()]
    assert events[0]["tools"] == ["every__echo"]
    [finished] = [event for event in events if event["type"] == "tool_result"]
    assert finished["output"] == "Echo: echoed through golem"  # the server's own answer
    assert not finished["is_error"]
    assert "Echo: echoed through golem" in model_saw  # and Claude Code gave it to the model
    reached = tracker.sent.decode().lower()
    assert f"authorization: bearer {TOKEN}" in reached  # the brokered credential reached it
    for text in (recorded, model_saw, store_text):  # and nothing else saw it
        assert TOKEN not in text


async def _run_with_tools(
    anthropic_server: AnthropicServer, port: int, image: str, reachable_dir: Path, tmp_path: Path
) -> tuple[RunState, str]:
    anthropic_server.push(
        stream_reply(ToolUse("mcp__golem__every__echo", {"message": "echoed through golem"})),
        stream_reply(Text("Done with the tools.")),
    )
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    tracker = {"name": "tracker", "host": r"^127\.0\.0\.1$", "env": "TRACKER_TOKEN", "value": TOKEN}
    servers = [{"name": "every", "url": f"http://127.0.0.1:{port}/mcp", "credential": "tracker"}]
    credentials = [anthropic_credential(anthropic_server), tracker]
    config = load_config(
        {
            "state_dir": str(tmp_path / "state"),
            "credentials": credentials,
            "engine": {"backend": {"type": "docker", "image": image}},
            "toolshed": {"servers": servers},
        },
        files=[],
    )  # as external_config makes it, and the toolshed (a dump would lose the secret)
    ports = f"{port}, {anthropic_server.url.rsplit(':', 1)[1].split('/')[0]}"
    blueprint = tmp_path / "claude-with-tools.yaml"
    blueprint.write_text(RUN_BLUEPRINT.format(ports=ports))
    request = RunRequest.model_validate(
        {"repo": str(make_remote(reachable_dir)), "task": "Echo", "blueprint": str(blueprint)}
    )
    store = await SqlStore.open(config)
    try:
        async with LocalEngine(config) as engine:
            state = await Runner(config, engine=engine, store=store).start(request)
        events = await RunBook(store).events(state.id)
    finally:
        await store.close()
    return state, "".join(event.model_dump_json() for _, event in events)
