"""An agent step is told how its work will be verified: the commands the run's loop will
run, that they run in the box in /workspace, what the box has ready and its network; and,
when nothing verifies the repository, that it must verify the change itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.agent import (
    AgentEvent,
    AgentStarted,
    ExternalAgent,
    ExternalTemplate,
    Verification,
    read_trajectory,
)
from golem.agent.external.prompt import external_prompt
from golem.agent.prompt import system_prompt
from golem.blueprint.book import RunBook
from golem.checks import CheckResult, Service, reach
from golem.store import Store
from tests.agent.external_support import external_config, lines, open_box
from tests.blueprint.repos import git
from tests.blueprint.runs import (  # noqa: F401 - the fixtures of the run tests
    SCRIPTS,
    MakeRunner,
    make_runner,
    remote,
    request,
    store,
)

FINISH_AT_ONCE = """\
turns:
  - tool_calls: [{name: finish, arguments: {summary: nothing to do}}]
"""

CUSTOM = """\
name: custom-checks
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - id: implement
    kind: agent
    prompt: "{{ task }}\\n\\nWhat verifies it:\\n{{ checks }}"
    next: verify
  - id: verify
    kind: loop
    checks: [test, "python3 -m compileall -q ."]
    max_rounds: 0
    fix: {prompt: "{{ failures }}"}
    next: {success: ship, failure: escalate}
  - {id: ship, kind: host, action: ship}
  - {id: escalate, kind: host, action: escalate}
"""


def started(path: str) -> AgentStarted:
    events, _ = read_trajectory(Path(path))
    [start] = [event for event in events if isinstance(event, AgentStarted)]
    return start


@pytest.mark.bwrap
async def test_the_agent_is_told_the_commands_that_verify_it_and_where_they_run(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
) -> None:
    state = await make_runner().start(request(remote, f"scripted:{SCRIPTS / 'round2.yaml'}"))
    assert state.status == "succeeded", state.error
    for trajectory in state.trajectories:  # the implement step and both fix rounds
        system = started(trajectory).system
        assert "# How your change is verified" in system
        assert "- test: `python3 -m unittest -v`" in system
        assert "in this sandbox, in /workspace" in system
        assert "no network" in system
        assert "these commands are what counts" in system
        assert system.index("How your change is verified") < system.index("# Context")


@pytest.mark.bwrap
async def test_checks_in_a_prompt_names_the_blueprints_own_verifying_commands(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "custom.yaml"
    blueprint.write_text(CUSTOM)
    state = await make_runner().start(request(remote, blueprint=str(blueprint)))
    start = started(state.trajectories[0])
    assert "What verifies it:\n- test: `python3 -m unittest -v`\n" in start.task
    assert "\n- `python3 -m compileall -q .`" in start.task
    assert "\n- `python3 -m compileall -q .`" in start.system


@pytest.mark.bwrap
async def test_with_nothing_to_verify_the_agent_is_asked_to_verify_it_itself(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    reachable_dir: Path,
    tmp_path: Path,
) -> None:
    seed = reachable_dir / "notes-seed"
    seed.mkdir()
    (seed / "README.md").write_text("Notes, and nothing to run.\n")
    git("init", "-q", "-b", "main", cwd=seed)
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "seed", cwd=seed)
    bare = reachable_dir / "notes.git"
    git("clone", "-q", "--bare", str(seed), str(bare), cwd=reachable_dir)
    script = tmp_path / "finish.yaml"
    script.write_text(FINISH_AT_ONCE)
    state = await make_runner().start(request(bare, f"scripted:{script}"))
    system = started(state.trajectories[0]).system
    assert "golem found no command that verifies this repository" in system
    assert "Verify it yourself" in system
    assert "- test:" not in system


HELD = """\
name: held
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", next: hold}
  - id: hold
    kind: gate
    message: Again?
    timeout: 0.01
    default: rejected
    next: {approved: verify, rejected: end}
  - id: verify
    kind: loop
    checks: [test]
    max_rounds: 0
    fix: {prompt: "{{ failures }}"}
"""


@pytest.mark.bwrap
async def test_a_run_with_installed_dependencies_and_a_baseline_says_so_in_the_prompt(
    make_runner: MakeRunner,  # noqa: F811 - fixtures, imported above
    remote: Path,  # noqa: F811 - fixtures, imported above
    store: Store,  # noqa: F811 - fixtures, imported above
    tmp_path: Path,
) -> None:
    blueprint, script = tmp_path / "held.yaml", tmp_path / "finish.yaml"
    blueprint.write_text(HELD)
    script.write_text(FINISH_AT_ONCE)
    held = await make_runner().start(
        request(remote, f"scripted:{script}", blueprint=str(blueprint))
    )
    book = RunBook(store)
    state = await book.load(held.id)
    assert state is not None
    assert state.conventions is not None
    # What the install and the baseline record before the agent starts, then the agent.
    conventions = state.conventions.model_copy(
        update={"install": ["uv sync --frozen"], "cache": [".venv"],
                "env": {"VIRTUAL_ENV": "/workspace/.venv"}}
    )  # fmt: skip
    failing = CheckResult(
        name="test", command="python3 -m unittest -v", passed=False, exit_code=1, duration=0.1
    )
    installed = CheckResult(
        name="install", command="uv sync --frozen", passed=True, exit_code=0, duration=1.0
    )
    state = state.model_copy(
        update={"conventions": conventions, "prepared": [installed], "baseline": [failing],
                "status": "running", "current": "implement", "owner_pid": None}
    )  # fmt: skip
    await book.save(state)
    again = await make_runner().resume(state.id)
    assert [Path(path).name for path in again.trajectories] == [
        "trajectory-implement-1.jsonl", "trajectory-implement-2.jsonl",
    ]  # fmt: skip
    first, second = (started(path).system for path in again.trajectories)
    assert "The dependencies are installed" not in first
    assert "The dependencies are installed into .venv (by `uv sync --frozen`" in second
    assert "- `VIRTUAL_ENV=/workspace/.venv`" in second
    assert "fail on the base commit too" in second


def test_the_prompt_says_what_the_box_has_ready_and_what_failed_before() -> None:
    verification = Verification(
        commands=[("lint", "ruff check ."), ("test", "pytest -q")],
        installed_by=["uv sync --all-extras"],
        installed_into=[".venv"],
        env={"VIRTUAL_ENV": "/workspace/.venv"},
        network="filtered",
        already_failing=[("lint", "ruff check .")],
    )
    prompt = system_prompt("/workspace", "## Rules of this repository: AGENTS.md", verification)
    assert "- lint: `ruff check .`\n- test: `pytest -q`" in prompt
    assert "installed into .venv (by `uv sync --all-extras`" in prompt
    assert "- `VIRTUAL_ENV=/workspace/.venv`" in prompt
    assert "network is filtered" in prompt
    assert "fail on the base commit too" in prompt
    assert "may have no network" not in prompt


def test_an_external_agent_gets_the_same_section() -> None:
    verification = Verification(commands=[("test", "go test ./...")])
    prompt = external_prompt("Fix it", "context", verification)
    assert verification.render() in prompt
    assert prompt.index("How your change is verified") < prompt.index("# Task")


@pytest.mark.bwrap
async def test_an_external_cli_reads_the_section_in_the_prompt_it_is_given(
    tmp_path: Path,
) -> None:
    template = ExternalTemplate(name="echo-prompt", argv=["cat"], stdin="{prompt}")
    verification = Verification(commands=[("test", "go test ./...")], network="filtered")
    events: list[AgentEvent] = []
    async with open_box(external_config(tmp_path, [])) as box:
        await ExternalAgent(template, on_event=events.append).run(
            box, "Fix it", verification=verification
        )
    read = lines(events, "stdout")
    assert "# How your change is verified" in read
    assert "- test: `go test ./...`" in read


def test_without_a_run_the_prompt_stays_as_it_was() -> None:
    prompt = system_prompt("/workspace")
    assert "How your change is verified" not in prompt
    assert "The sandbox may have no network." in prompt


def test_the_prompt_lists_the_services_running_in_the_box_and_how_to_reach_them() -> None:
    service = Service(
        name="postgres", image="postgres:16", ports=[5432], origin=".github/workflows/ci.yml"
    )
    verification = Verification(commands=[("test", "pytest")], services=[reach(service)])

    prompt = system_prompt("/workspace", verification=verification)

    assert "- postgres (postgres:16): localhost:5432" in prompt
    assert "own container engine" in prompt
    assert "container engine" not in system_prompt(
        "/workspace", verification=Verification(commands=[("test", "pytest")])
    )
