"""External agents through templates, in real bubblewrap boxes: any CLI with its argv, env
and prompt verbatim, golem's wall-clock, turn and dollar limits, the stdout filter, and the
errors of boxes unfit for an external agent.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

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
)
from golem.agent.external import (
    ANTHROPIC,
    ExternalAgent,
    ExternalTemplate,
)
from golem.agent.external.prompt import external_prompt
from golem.core import ConfigError, RuntimeNotAvailable
from golem.testing.models import AnthropicServer
from tests.agent.external_support import (
    anthropic_credential,
    external_config,
    lines,
    open_box,
)

ROUTE = re.compile(r"^http://127\.0\.0\.1:\d+/_golem/anthropic$")


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
    events: list[AgentEvent] = []
    releases: list[asyncio.Task[Any]] = []
    async with open_box(config, anthropic_server) as box:

        def on_event(event: AgentEvent) -> None:
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
    assert leftovers.stdout_text == ""  # the run directory is removed after the run
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
    events: list[AgentEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        agent = ExternalAgent(template, budget=Budget(wall_seconds=1), on_event=events.append)
        outcome = await agent.run(box, "Run on")
    assert outcome.status == "budget_spent"
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
    events: list[AgentEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        outcome = await ExternalAgent(template, budget=budget, on_event=events.append).run(
            box, "Go"
        )
        processes = await box.execute(["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"])
    assert (outcome.status, outcome.reason, outcome.turns) == ("budget_spent", reason, 1)
    assert outcome.cost_usd == 0.5
    assert "cli.py" not in processes.stdout_text  # killed, not left waiting
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
    events: list[AgentEvent] = []
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
