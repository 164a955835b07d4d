"""The tests' runs of an evaluation: a tree's tests run in golem's boxes the way golem's
own verification runs them, by a run of a small blueprint of golem's (prepare, install the
dependencies as the repository's ecosystem does, setup, then each test command, whatever
the one before said), and each test's outcome read from what the commands printed.

Test runners are asked to name the tests that pass too: pytest by ``PYTEST_ADDOPTS=-rA``,
``go test`` by ``GOFLAGS=-v``, unittest by ``-v`` on its command; cargo test, TAP and
mocha name them anyway. Each run's checkout is removed once read; the run stays in the
store (``golem runs show`` tells what it did).
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

import yaml

from golem.blueprint import CheckOutput, NodeRecord, RunEvent, Runner, RunRequest, RunState
from golem.checks import find_outcomes
from golem.core.config import GolemConfig
from golem.eval.judge import CommandOutcome, TestRun
from golem.sandbox import Engine
from golem.store import Store

__all__ = ["Testbed", "naming_command", "naming_env"]

NAMING_ENV = {"PYTEST_ADDOPTS": "-rA", "GOFLAGS": "-v"}
"""What makes test runners name passing tests, added to whatever the box's settings say."""
_SHELL = set("|&;<>()$`\\\"'\n*?[]{}~#")


def naming_command(command: str) -> str:
    """``command``, asked to name its passing tests where only its arguments can ask (a
    plain ``python -m unittest`` gets ``-v``)."""
    if any(char in _SHELL for char in command):
        return command
    words = shlex.split(command)
    if "unittest" in words and "-m" in words and not {"-v", "--verbose"} & set(words):
        return f"{command} -v"
    return command


def naming_env(*layers: dict[str, str]) -> dict[str, str]:
    """``NAMING_ENV`` added to the same variables of ``layers`` (later ones win), so that a
    repository's own ``GOFLAGS`` or ``PYTEST_ADDOPTS`` still hold."""
    env = {}
    for name, value in NAMING_ENV.items():
        own = next((layer[name] for layer in reversed(layers) if layer.get(name)), "")
        env[name] = f"{own} {value}".strip()
    return env


class Testbed:
    """Runs trees' tests: each ``run`` is a golem run of its own, on the engine and store
    given; its blueprint is written under ``workdir``."""

    def __init__(self, config: GolemConfig, engine: Engine, store: Store, workdir: Path) -> None:
        self.config = config
        self.engine = engine
        self.store = store
        self.workdir = workdir

    async def run(
        self, remote: Path, commands: list[str], env: dict[str, str], label: str
    ) -> TestRun:
        """Run ``commands`` on the default branch of the repository at ``remote``, the box
        given ``env`` on top of what the repository's conventions set."""
        blueprint = self.workdir / f"{label}.blueprint.yaml"
        blueprint.parent.mkdir(parents=True, exist_ok=True)
        blueprint.write_text(_blueprint(commands, env), encoding="utf-8")
        printed: dict[str, list[str]] = {}
        capped: set[str] = set()

        def keep(event: RunEvent) -> None:
            if isinstance(event, CheckOutput):
                if event.stream == "golem":
                    capped.add(event.node)
                else:
                    printed.setdefault(event.node, []).append(event.text)

        started = time.monotonic()
        runner = Runner(self.config, engine=self.engine, store=self.store, on_event=keep)
        request = RunRequest(
            repo=str(remote),
            task=f"golem eval: the tests of {label}",
            blueprint=str(blueprint),
            forge="local",
        )
        state = await runner.start(request)
        shutil.rmtree(self.config.state_dir / "runs" / state.id, ignore_errors=True)
        seconds = time.monotonic() - started
        outcomes = [
            _outcome(
                state,
                f"test-{n}",
                command,
                "".join(printed.get(f"test-{n}", [])),
                complete=f"test-{n}" not in capped,
            )
            for n, command in enumerate(commands, 1)
        ]
        ran = [outcome for outcome in outcomes if outcome is not None]
        if len(ran) < len(commands):
            return TestRun(
                ran=False, why=_why_not(state), commands=ran, run_id=state.id, seconds=seconds
            )
        return TestRun(ran=True, commands=ran, run_id=state.id, seconds=seconds)


def _blueprint(commands: list[str], env: dict[str, str]) -> str:
    nodes: list[dict[str, object]] = [
        {"id": "prepare", "kind": "host", "action": "prepare", "next": "install"},
        {
            "id": "install",
            "kind": "host",
            "action": "install",
            "next": {"success": "setup", "failure": "end"},
        },
        {
            "id": "setup",
            "kind": "box",
            "check": "setup",
            "next": {"success": "test-1", "failure": "end"},
        },
    ]
    for n, command in enumerate(commands, 1):
        following = f"test-{n + 1}" if n < len(commands) else "end"
        nodes.append({"id": f"test-{n}", "kind": "box", "run": [command], "next": following})
    document = {
        "name": "eval-tests",
        "description": "golem eval: run a tree's tests, each command whatever the last said",
        "box": {"env": env},
        "nodes": nodes,
    }
    return yaml.safe_dump(document, sort_keys=False)


def _outcome(
    state: RunState, node: str, command: str, text: str, *, complete: bool
) -> CommandOutcome | None:
    if not any(step.node == node for step in state.steps):
        return None
    result = next((r for r in state.prepared if (r.name, r.command) == (command, command)), None)
    if result is None:
        return None
    outcomes = find_outcomes(command, text)
    return CommandOutcome(
        command=command,
        passed=result.passed,
        exit_code=result.exit_code,
        reason=result.reason,
        tests_passed=sorted(outcomes.passed),
        tests_failed=sorted(outcomes.failed),
        names_passes=outcomes.names_passes,
        complete=complete,
    )


def _why_not(state: RunState) -> str:
    failed: NodeRecord | None = next((s for s in state.steps if s.outcome == "failure"), None)
    if failed is not None and failed.node in ("install", "setup"):
        return f"the environment could not be made ({failed.node} failed): {state.error}"
    return f"the tests did not run: {state.error or state.status}"
