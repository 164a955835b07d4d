"""External CLI agents inside real boxes: the real Claude Code, Codex, pi and aider in
filtered docker boxes, reaching the loopback wire servers only through golem's credential
route; a custom CLI through a template; and the errors of boxes unfit for them.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from golem.agent import (
    AgentFinished,
    AgentStarted,
    Budget,
    ModelAnswered,
    ToolFinished,
    ToolStarted,
    read_trajectory,
)
from golem.agent.external import (
    ANTHROPIC,
    ExternalAgent,
    ExternalEvent,
    ExternalOutput,
    ExternalTemplate,
)
from golem.agent.external.prompt import external_prompt
from golem.core import ConfigError, RuntimeNotAvailable
from golem.sandbox import Box, ExecRequest
from tests.agent.external_support import (
    SCAN,
    anthropic_credential,
    cli_image,
    external_config,
    open_box,
    openai_credential,
)
from tests.agent.wire import TEST_KEY, AnthropicServer, OpenAIServer
from tests.agent.wire.anthropic_server import AnthropicUsage, Text, ToolUse, stream_reply
from tests.agent.wire.openai_responses import FunctionCall, OutputText, responses_stream_reply

BUILD_TIMEOUT = 900
"""Seconds for a test that may build a CLI image first (npm or pip installs)."""
ROUTE = re.compile(r"^http://127\.0\.0\.1:\d+/_golem/anthropic$")


def of_type(events: list[ExternalEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def lines(events: list[ExternalEvent], stream: str) -> list[str]:
    return [e.line for e in events if isinstance(e, ExternalOutput) and e.stream == stream]


async def assert_no_trace_of_the_key(box: Box, events: list[ExternalEvent], path: Path) -> None:
    """The real key is in no process environment or command line, file, event or line of
    output of the box, nor in the trajectory; the box holds a sentinel instead."""
    scan = await box.execute(
        ExecRequest(code=SCAN, runtime="python", stdin=TEST_KEY[::-1].encode())
    )
    assert scan.stdout == "[]\n", scan.stderr
    env = await box.execute("env")
    assert TEST_KEY not in env.stdout
    assert re.search(r"^\w+_API_KEY=golem-sentinel-", env.stdout, re.MULTILINE)
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
    events: list[ExternalEvent] = []
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        await box.put_file("/tmp/scan.py", SCAN)
        agent = ExternalAgent(
            "claude", model="claude-sonnet-4-5", budget=Budget(turns=7), on_event=events.append
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
    started = of_type(events, ToolStarted)
    assert [(s.call.name, s.call.arguments) for s in started] == [("Bash", scan), ("Write", write)]
    finished = of_type(events, ToolFinished)
    assert finished[0].output == "[]"  # the scan, run by Claude Code itself, found nothing
    assert not any(f.is_error for f in finished)
    answers = of_type(events, ModelAnswered)  # one per content block, as Claude Code prints
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
    assert [type(e) for e in recorded] == [
        type(e) for e in events if not isinstance(e, ExternalOutput)
    ]
    assert len(notes) == len(of_type(events, ExternalOutput))


@pytest.mark.docker
@pytest.mark.timeout(BUILD_TIMEOUT)
async def test_claude_code_stops_at_the_turn_budget(
    claude_image: str, anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    anthropic_server.otherwise(stream_reply(ToolUse("Bash", {"command": "true"})))
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)], claude_image)
    async with open_box(config, anthropic_server) as box:
        outcome = await ExternalAgent("claude", budget=Budget(turns=2)).run(box, "Loop")
    assert outcome.status == "budget_exhausted"
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
    assert outcome.status == "budget_exhausted"
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
    events: list[ExternalEvent] = []
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, openai_server) as box:
        agent = ExternalAgent("codex", model="gpt-5-mini", on_event=events.append)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hello from codex\n"
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert (outcome.status, outcome.summary, outcome.turns) == ("done", "I wrote hello.txt.", 2)
    assert outcome.usage.input_tokens == 20
    assert outcome.cost_usd > 0  # codex reports tokens only: priced by golem's table
    [started] = of_type(events, ToolStarted)
    assert started.call.name == "command_execution"
    assert command in started.call.arguments["command"]
    [finished] = of_type(events, ToolFinished)
    assert not finished.is_error
    texts = [a.response.message.content for a in of_type(events, ModelAnswered)]
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
    events: list[ExternalEvent] = []
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        agent = ExternalAgent("pi", model="claude-sonnet-4-5", on_event=events.append)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hi\n"
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert (outcome.status, outcome.summary, outcome.turns) == ("done", "I wrote hello.txt.", 2)
    assert outcome.cost_usd > 0  # pi's own price for the tokens
    assert [s.call.name for s in of_type(events, ToolStarted)] == ["write"]
    assert [f.output for f in of_type(events, ToolFinished)] == [
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
    assert (outcome.status, outcome.turns) == ("budget_exhausted", 1)
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
    events: list[ExternalEvent] = []
    trajectory = tmp_path / "run.jsonl"
    async with open_box(config, anthropic_server) as box:
        agent = ExternalAgent("aider", model="anthropic/claude-sonnet-4-5", on_event=events.append)
        outcome = await agent.run(box, "Write hello.txt", trajectory=trajectory)
        assert await box.get_file("/workspace/hello.txt") == b"hello from aider\n"
        listing = await box.execute("ls -A /workspace")
        await assert_no_trace_of_the_key(box, events, trajectory)

    assert listing.stdout == "hello.txt\n"  # aider's history files went to its run directory
    assert outcome.status == "done"
    assert "Applied edit to hello.txt" in outcome.summary
    assert outcome.turns == 1
    assert outcome.cost_usd > 0  # from aider's "Cost: $... session" line
    assert outcome.usage.output_tokens > 0
    assert {r.headers["x-api-key"] for r in anthropic_server.requests} == {TEST_KEY}
    assert len(anthropic_server.requests) == 1
    refused = [e for e in lines(events, "golem") if "refused" in e]
    assert [e.split()[3] for e in refused] == ["raw.githubusercontent.com:443"]  # model info


# A custom CLI through a template ---------------------------------------------------------

FAKE_CLI = """\
import json, os, sys
fifo = os.path.join(os.environ["FAKE_RUN_DIR"], "go")
os.mkfifo(fifo)
print("first " + fifo, flush=True)
with open(fifo) as waiting:
    waiting.read()
prompt_file = sys.argv[sys.argv.index("--prompt-file") + 1]
print(json.dumps({
    "argv": sys.argv[1:],
    "stdin": sys.stdin.read(),
    "prompt_file": open(prompt_file).read(),
    "env": {k: os.environ.get(k, "") for k in ("FAKE_MODE", "FAKE_ROUTE", "ANTHROPIC_API_KEY")},
}), flush=True)
print("a warning on stderr", file=sys.stderr, flush=True)
print("all done")
"""
TRICKY_TASK = (
    "Say \"hi\" and 'bye'; $(touch /tmp/pwned) `touch /tmp/pwned2`\nsecond line {model} \\n"
)


def fake_template(**changes: Any) -> ExternalTemplate:
    settings: dict[str, Any] = {
        "name": "fake",
        "argv": [
            "python3", "{run_dir}/cli.py", "--task", "{task}", "--prompt-file", "{prompt_file}",
        ],
        "model_args": ["--model", "{model}"],
        "turns_args": ["--turns={max_turns}"],
        "env": {
            "FAKE_MODE": "one-shot", "FAKE_ROUTE": "{env:ANTHROPIC_BASE_URL}",
            "FAKE_RUN_DIR": "{run_dir}",
        },
        "files": {"cli.py": FAKE_CLI},
        "stdin": "{prompt}",
        "credentials": [ANTHROPIC],
        **changes,
    }  # fmt: skip
    return ExternalTemplate(**settings)


@pytest.mark.bwrap
async def test_a_template_runs_any_cli_with_its_argv_env_and_prompt_verbatim(
    anthropic_server: AnthropicServer, tmp_path: Path
) -> None:
    config = external_config(tmp_path, [anthropic_credential(anthropic_server)])
    events: list[ExternalEvent] = []
    releases: list[asyncio.Task[Any]] = []
    async with open_box(config, anthropic_server) as box:

        def on_event(event: ExternalEvent) -> None:
            events.append(event)
            if isinstance(event, ExternalOutput) and event.line.startswith("first "):
                # The CLI waits on this FIFO: it finishes only if its first line was
                # delivered while it ran.
                fifo = event.line.removeprefix("first ")
                releases.append(
                    asyncio.create_task(box.execute(["sh", "-c", 'echo go > "$1"', "sh", fifo]))
                )

        agent = ExternalAgent(
            fake_template(), model="m-1", budget=Budget(turns=3), on_event=on_event
        )
        outcome = await agent.run(box, TRICKY_TASK, context="Rules: be brief.")
        await asyncio.gather(*releases)
        pwned = await box.execute("ls /tmp/pwned /tmp/pwned2")
        leftovers = await box.execute("ls -A /tmp/golem-external")

    assert outcome.status == "done"
    assert outcome.summary.endswith("all done")
    assert pwned.exit_code != 0
    assert leftovers.stdout == ""  # the run directory is removed after the run
    stdout = lines(events, "stdout")
    assert stdout[0].startswith("first /tmp/golem-external/")
    report = json.loads(stdout[1])
    run_dir = stdout[0].removeprefix("first ").removesuffix("/go")
    prompt = external_prompt(TRICKY_TASK, "Rules: be brief.")
    assert report["argv"] == [
        "--task", TRICKY_TASK, "--prompt-file", f"{run_dir}/prompt.md", "--model", "m-1",
        "--turns=3",
    ]  # fmt: skip
    assert report["stdin"] == prompt
    assert report["prompt_file"] == prompt
    assert report["env"]["FAKE_MODE"] == "one-shot"
    assert ROUTE.match(report["env"]["FAKE_ROUTE"])
    assert report["env"]["ANTHROPIC_API_KEY"].startswith("golem-sentinel-anthropic-")
    assert stdout[2:] == ["all done"]
    assert lines(events, "stderr") == ["a warning on stderr"]
    assert isinstance(events[0], AgentStarted)
    assert events[0].model == "fake/m-1"
    assert isinstance(events[-1], AgentFinished)


@pytest.mark.bwrap
async def test_the_wall_clock_budget_stops_a_cli_that_runs_on(tmp_path: Path) -> None:
    template = ExternalTemplate(name="stuck", argv=["sh", "-c", "echo started; exec sleep 600"])
    events: list[ExternalEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        agent = ExternalAgent(template, budget=Budget(wall_seconds=1), on_event=events.append)
        outcome = await agent.run(box, "Run on")
    assert outcome.status == "budget_exhausted"
    assert outcome.reason == "wall-clock budget of 1s spent; golem stopped stuck"
    assert lines(events, "stdout") == ["started"]


FAKE_PI = """\
import json, os
reply = {"role": "assistant", "model": "m", "stopReason": "toolUse",
         "content": [{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {}}],
         "usage": {"input": 10, "output": 5, "cost": {"total": 0.5}}}
for event in (
    {"type": "message_end", "message": reply},
    {"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash", "args": {}},
    {"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "isError": False,
     "result": {"content": [{"type": "text", "text": "ok"}]}},
):
    print(json.dumps(event), flush=True)
fifo = os.path.join(os.environ["FAKE_RUN_DIR"], "next-call")
os.mkfifo(fifo)
open(fifo).read()  # stands for the next model call, which golem must not let happen
print("the next reply")
"""


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        (Budget(turns=1), "turn budget of 1 model calls used; golem stopped fakepi"),
        (Budget(turns=None, usd=0.25), "dollar budget of $0.25 spent ($0.5000); golem stopped "
         "fakepi"),
    ],
)  # fmt: skip
async def test_golem_stops_a_cli_before_a_model_call_its_budget_has_no_room_for(
    budget: Budget, reason: str, tmp_path: Path
) -> None:
    template = ExternalTemplate(
        name="fakepi", argv=["python3", "{run_dir}/cli.py"], files={"cli.py": FAKE_PI},
        env={"FAKE_RUN_DIR": "{run_dir}"}, output="pi",
    )  # fmt: skip
    events: list[ExternalEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        outcome = await ExternalAgent(template, budget=budget, on_event=events.append).run(
            box, "Go"
        )
        processes = await box.execute(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"])
    assert (outcome.status, outcome.reason, outcome.turns) == ("budget_exhausted", reason, 1)
    assert outcome.cost_usd == 0.5
    assert "cli.py" not in processes.stdout  # killed, not left waiting
    assert "the next reply" not in lines(events, "stdout")
    assert [type(e) for e in events if not isinstance(e, ExternalOutput)] == [
        AgentStarted, ModelAnswered, ToolStarted, ToolFinished, AgentFinished,
    ]  # fmt: skip


@pytest.mark.bwrap
async def test_dropped_lines_never_leave_the_box_and_the_exit_code_survives_the_filter(
    tmp_path: Path,
) -> None:
    script = "printf 'keep 1\\nDROP me\\nkeep 2\\n'; echo trouble >&2; exit 3"
    template = ExternalTemplate(name="noisy", argv=["sh", "-c", script], drop_stdout="^DROP")
    events: list[ExternalEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        outcome = await ExternalAgent(template, on_event=events.append).run(box, "Go")
    assert lines(events, "stdout") == ["keep 1", "keep 2"]
    assert (outcome.status, outcome.reason) == ("error", "noisy exited with code 3: trouble")
    assert outcome.summary == "keep 1\nkeep 2"


# Boxes unfit for an external agent ------------------------------------------------------


@pytest.mark.bwrap
async def test_a_box_that_is_not_filtered_is_refused_with_the_credentials_to_add(
    tmp_path: Path,
) -> None:
    async with open_box(external_config(tmp_path, []), network="none") as box:
        with pytest.raises(ConfigError) as caught:
            await ExternalAgent("claude").run(box, "Fix it")
    message = caught.value.message
    assert "network = 'filtered'" in message
    assert "[[credentials]]" in message
    assert 'env = "ANTHROPIC_API_KEY"' in message
    assert 'base_url_env = "ANTHROPIC_BASE_URL"' in message


@pytest.mark.bwrap
async def test_a_missing_cli_names_the_image_recipe_that_installs_it(tmp_path: Path) -> None:
    async with open_box(external_config(tmp_path, [])) as box:
        with pytest.raises(RuntimeNotAvailable) as caught:
            await ExternalAgent("claude").run(box, "Fix it")
    assert "has no 'claude'" in caught.value.message
    assert '[[images]]\ntag = "my-org/claude-devbox:1"' in caught.value.message
    assert 'install = ["npm:@anthropic-ai/claude-code"]' in caught.value.message


@pytest.mark.bwrap
async def test_a_missing_credential_names_the_variables_and_the_entry_to_add(
    tmp_path: Path,
) -> None:
    async with open_box(external_config(tmp_path, [])) as box:
        with pytest.raises(ConfigError) as caught:
            await ExternalAgent(fake_template()).run(box, "Fix it")
    message = caught.value.message
    assert "needs ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL in the box" in message
    assert "[[credentials]]\nname = \"anthropic\"\nhost = '^api\\.anthropic\\.com$'" in message
    assert 'upstream = "https://api.anthropic.com"' in message


@pytest.mark.bwrap
async def test_a_real_key_in_the_box_is_refused(tmp_path: Path) -> None:
    async with open_box(external_config(tmp_path, []), env={"ANTHROPIC_API_KEY": "sk-x"}) as box:
        with pytest.raises(ConfigError) as caught:
            await ExternalAgent(fake_template()).run(box, "Fix it")
    message = caught.value.message
    assert "ANTHROPIC_API_KEY in the box holds a value golem did not put there" in message


def test_an_unknown_agent_kind_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="choose one of claude, codex, pi, aider, goose"):
        ExternalAgent("cursor")


def test_a_template_must_name_its_cli_plainly() -> None:
    with pytest.raises(ValueError, match="argv\\[0\\] '\\{run_dir\\}/cli' names the CLI"):
        ExternalTemplate(name="bad", argv=["{run_dir}/cli"])


@pytest.mark.bwrap
async def test_a_template_that_needs_a_model_says_so(tmp_path: Path) -> None:
    template = ExternalTemplate(name="picky", argv=["sh", "-c", "true", "{model}"])
    async with open_box(external_config(tmp_path, [])) as box:
        with pytest.raises(ConfigError, match="uses \\{model\\}, but no model was given"):
            await ExternalAgent(template).run(box, "Go")


def test_the_package_exports_every_name_it_lists_and_every_builtin_and_parser() -> None:
    from golem.agent import external

    for name in external.__all__:
        assert getattr(external, name) is not None
    assert set(external.BUILTINS) == {"claude", "codex", "pi", "aider", "goose"}
    assert {t.output for t in external.BUILTINS.values()} <= set(external.PARSERS)
