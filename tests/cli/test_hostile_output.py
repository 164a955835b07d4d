"""What a forge, a repository or a recorded agent run hands golem is printed as text by
the real commands: its markup shown as it is (no style, no hyperlink), its escape
sequences and hidden characters gone, golem's own styles still written. The class of
values is closed in ``golem.core.console`` and ``tests/core/test_printing_guard.py``;
these attack it through the commands a user runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from golem.agent.events import (
    AgentFinished,
    AgentOutcome,
    AgentStarted,
    Budget,
    ExternalOutput,
    ToolCall,
    ToolFinished,
    ToolStarted,
    Usage,
)
from golem.forge import LocalForge, PullRequestDraft
from golem.store import SqlStore
from tests.cli.hostile import HOSTILE, SHOWN, foreign, golems_terminal, shown_as_text
from tests.cli.invoke import golem
from tests.context.conftest import write_tree


def test_prs_ls_and_show_print_what_the_forge_holds_as_text(golem_env: dict[str, str]) -> None:
    async def create() -> int:
        Path(golem_env["GOLEM_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
        store = await SqlStore.connect(f"sqlite:///{golem_env['GOLEM_STATE_DIR']}/golem.db")
        try:
            draft = PullRequestDraft(repo=HOSTILE, base=HOSTILE, head=HOSTILE, title=HOSTILE,
                                     body=HOSTILE, labels=[HOSTILE])  # fmt: skip
            return (await LocalForge(store).open_pull_request(draft, diff="")).number
        finally:
            await store.close()

    number = asyncio.run(create())
    env = golems_terminal(golem_env)
    listed = golem(env, "prs", "ls").stdout.decode()
    shown = golem(env, "prs", "show", str(number)).stdout.decode()
    assert "\x1b[1m" in shown  # golem's own bold
    assert foreign(listed) == foreign(shown) == []
    assert shown_as_text(listed).count(SHOWN) == 3  # repository, branch, title
    assert shown_as_text(shown).count(SHOWN) == 5  # title, branch, base, label, body


def test_trajectory_show_prints_what_the_model_and_the_box_said_as_text(
    golem_env: dict[str, str], tmp_path: Path
) -> None:
    call = ToolCall(id="1", name=HOSTILE, arguments={"command": HOSTILE})
    outcome = AgentOutcome(status="done", summary=HOSTILE, reason=HOSTILE, usage=Usage(),
                           cost_usd=0.0, turns=1, duration=1.0)  # fmt: skip
    events = [
        AgentStarted(task=HOSTILE, model=HOSTILE, tools=[HOSTILE], budget=Budget(), system=""),
        ToolStarted(call=call),
        ToolFinished(call_id="1", name=HOSTILE, output=HOSTILE, is_error=True, duration=0.1),
        ExternalOutput(stream="stdout", line=HOSTILE),
        AgentFinished(outcome=outcome),
    ]
    recorded = tmp_path / "trajectory.jsonl"
    recorded.write_text("".join(event.model_dump_json() + "\n" for event in events))
    done = golem(golems_terminal(golem_env), "trajectory", "show", str(recorded))
    assert done.returncode == 0, done.stderr
    assert foreign(done.stdout.decode()) == []
    # the model, the task, the tools, the call (its command cut), the output, the box's
    # line, the summary and the reason
    assert shown_as_text(done.stdout.decode()).count(SHOWN) == 8


def test_checks_detect_prints_what_the_repository_says_as_text(
    golem_env: dict[str, str], tmp_path: Path
) -> None:
    quoted = json.dumps(HOSTILE)
    write_tree(tmp_path, {
        ".github/workflows/ci.yml": f"jobs:\n  {quoted}:\n    steps:\n"
                                    f"      - run: {quoted}\n      - run: go test ./...\n",
        "go.mod": "module example.com/x\n",
    })  # fmt: skip
    done = golem(golems_terminal(golem_env), "checks", "detect", "--repo", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert foreign(done.stdout.decode()) == []
    assert SHOWN in shown_as_text(done.stdout.decode())


def test_a_config_files_key_in_an_error_is_printed_as_text(golem_env: dict[str, str]) -> None:
    user_dir = Path(golem_env["XDG_CONFIG_HOME"]) / "golem"
    user_dir.mkdir(parents=True)
    (user_dir / "golem.toml").write_text(f"{json.dumps(HOSTILE)} = 1\n")
    done = golem(golems_terminal(golem_env), "config", "show")
    assert done.returncode != 0
    said = done.stderr.decode()
    assert foreign(said) == []
    assert SHOWN in shown_as_text(said)
