"""One attempt at one task: golem's blueprint runs on a repository holding the task's base
and nothing later; once the run has ended, its work (the checkout's tree, committed or not)
gets the hidden tests laid over it, in another repository the run never saw, and the tests
run in a box of their own.

The agent never sees the hidden tests: its remote is made of the base's history alone (one
branch at the base, no tag, no later object: checked before the run starts), the tests are
laid over its work only after its run has ended, and they run in a box made for them.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from golem.blueprint import Runner, RunRequest, RunState
from golem.core.config import GolemConfig
from golem.core.errors import EvalError, GitError
from golem.eval.judge import TestRun, score
from golem.eval.repos import Sources, Trees, new_bare, only_the_base, work_tree_commit
from golem.eval.results import Attempt, EvalSettings, verdict_of
from golem.eval.tasks import EvalTask
from golem.eval.testbed import Testbed, naming_command, naming_env
from golem.forge import GitRepo, is_repo_name
from golem.sandbox import Engine
from golem.store import Store

__all__ = ["GOLD", "AttemptRunner", "Environment"]

GOLD = "gold"
"""The model that replays each task's gold patch: what golem's pipeline makes of a right fix."""
GOLD_FILE = ".golem-eval-gold.patch"
WORK_REF = "refs/golem-eval/work"


@dataclass(frozen=True)
class Environment:
    """What every attempt at a task shares: its repository's clone, the commands its hidden
    tests run by, and their box's variables."""

    source: GitRepo
    commands: list[str]
    env: dict[str, str]


class AttemptRunner:
    """Runs attempts at tasks and judges them; what a task needs is made once for all of
    its attempts."""

    def __init__(
        self,
        config: GolemConfig,
        engine: Engine,
        store: Store,
        settings: EvalSettings,
        *,
        results: Path,
        repo_url: str,
    ) -> None:
        self.config = config
        self.engine = engine
        self.store = store
        self.settings = settings
        self.results = results
        self.repo_url = repo_url
        self.sources = Sources(config)
        self.testbed = Testbed(config, engine, store, results / "blueprints")
        self._environments: dict[str, asyncio.Task[Environment]] = {}

    def remote_of(self, task: EvalTask) -> str:
        """Where the task's repository is cloned from."""
        if task.golem_remote:
            return task.golem_remote
        if is_repo_name(task.repo):
            return self.repo_url.format(repo=task.repo)
        return task.repo

    async def environment(self, task: EvalTask) -> Environment:
        """The task's environment, made by the first attempt that asks (an EvalError
        saying why it cannot be had)."""
        if task.instance_id not in self._environments:
            made = asyncio.ensure_future(self._environment(task))
            self._environments[task.instance_id] = made
        return await asyncio.shield(self._environments[task.instance_id])

    async def _environment(self, task: EvalTask) -> Environment:
        url = self.remote_of(task)
        source = await self.sources.have(url, task.base_commit)
        conventions = await self.sources.conventions_at(url, task.base_commit)
        commands = task.golem_test_commands or [naming_command(c) for c in conventions.test]
        if not commands:
            raise EvalError(
                "golem finds no test command at the base commit: give the task's "
                "golem_test_commands"
            )
        env = naming_env(self.config.engine.defaults.env, conventions.env)
        environment = Environment(source=source, commands=commands, env=env)
        if not task.golem_test_commands:  # made elsewhere: golem's environment must pass it
            await self._gold_passes(task, environment)
        return environment

    async def _gold_passes(self, task: EvalTask, environment: Environment) -> None:
        """Whether the gold patch resolves the task in golem's environment (a task made
        elsewhere was judged in its own): an EvalError saying what failed, if not."""
        work = self.results / "work" / task.instance_id / "gold"
        shutil.rmtree(work, ignore_errors=True)
        trees = await self._hidden(work, task, environment)
        gold = await trees.applied(task.base_commit, task.patch)
        fixed = await trees.commit(gold, task.base_commit, "the gold patch")
        run = await self._hidden_tests(trees, task, fixed, environment, f"{task.instance_id}-gold")
        judged = score(task, run)
        shutil.rmtree(work, ignore_errors=True)
        if not judged.resolved:
            failing = ", ".join(judged.failing()[:5]) or run.why or "its tests"
            raise EvalError(
                f"in golem's environment the gold patch does not resolve it ({failing} did "
                f"not pass{': ' + run.why if run.why else ''}): the environment is not the "
                "one its tests need; give the task's golem_test_commands, or a .golem.toml"
            )

    async def run(self, task: EvalTask, number: int) -> Attempt:
        """Attempt ``number`` at ``task``: the agent's run, then the hidden tests."""
        environment = await self.environment(task)
        work = self.results / "work" / task.instance_id / str(number)
        shutil.rmtree(work, ignore_errors=True)
        trees = await self._hidden(work, task, environment)  # the agent never reaches these
        remote = await only_the_base(work / "agent.git", environment.source, task.base_commit)
        request = RunRequest(
            repo=str(remote.path),
            task=task.problem_statement,
            blueprint=self.settings.blueprint,
            model=self._model(task, work),
            forge="local",
            budget_usd=self.settings.budget_usd,
        )
        started = time.monotonic()
        state = await Runner(self.config, engine=self.engine, store=self.store).start(request)
        seconds = time.monotonic() - started
        work_commit = await self._work(trees, task, state)
        tests = await self._hidden_tests(
            trees, task, work_commit, environment, f"{task.instance_id}-{number}"
        )
        judged = score(task, tests)
        attempt = Attempt(
            instance_id=task.instance_id,
            attempt=number,
            run_id=state.id,
            status=state.status,
            verdict=verdict_of(state.status),
            resolved=judged.resolved if tests.ran else False,
            score=judged,
            error=state.error if state.status == "failed" else None,
            cost_usd=state.cost_usd,
            turns=state.turns,
            seconds=seconds,
            nodes=_nodes(state),
            rounds=state.rounds,
            tests_seconds=tests.seconds,
            tests_run=tests.run_id,
            patch=await trees.diff(task.base_commit, work_commit),
        )
        if not tests.ran:
            attempt.error = f"the hidden tests could not run on its work: {tests.why}"
        shutil.rmtree(work, ignore_errors=True)
        return attempt

    async def _hidden(self, work: Path, task: EvalTask, environment: Environment) -> Trees:
        """A repository of the hidden tests' (the base, and the base with the test patch
        as ``refs/golem/tests``), apart from the agent's."""
        trees = Trees(await new_bare(work / "tests.git"))
        await trees.fetch(environment.source.path, task.base_commit, "refs/golem/base")
        try:
            tested = await trees.applied(task.base_commit, task.test_patch)
        except GitError as exc:
            raise EvalError(
                f"its test_patch does not apply at its base_commit: {exc.message}"
            ) from exc
        await trees.commit(tested, task.base_commit, "the hidden tests", "golem-tests")
        return trees

    async def _hidden_tests(
        self, trees: Trees, task: EvalTask, commit: str, environment: Environment, label: str
    ) -> TestRun:
        """The hidden tests run on ``commit``'s tree with the test patch's files as the
        patch has them (whatever the change did to them)."""
        paths = await trees.changed(task.base_commit, "refs/heads/golem-tests")
        tree = await trees.overlay(commit, "refs/heads/golem-tests", paths)
        await trees.commit(tree, commit, "the hidden tests over the change", "main")
        return await self.testbed.run(trees.repo.path, environment.commands, environment.env, label)

    async def _work(self, trees: Trees, task: EvalTask, state: RunState) -> str:
        """The run's work as a commit of the hidden tests' repository: its checkout's tree
        (committed or not); the base when it made no checkout."""
        checkout = Path(state.workspace) / ".git"
        if not state.workspace or not checkout.is_dir():
            return task.base_commit
        repo = GitRepo(state.workspace)
        commit = await work_tree_commit(repo, task.base_commit, WORK_REF)
        await trees.fetch(repo.path, commit, WORK_REF)
        return commit

    def _model(self, task: EvalTask, work: Path) -> str:
        """The run's model: ``gold`` replays the task's gold patch; ``{instance_id}`` in
        the model's name is the task's."""
        model = self.settings.model
        if model != GOLD:
            return model.replace("{instance_id}", task.instance_id)
        work.mkdir(parents=True, exist_ok=True)
        script = work / "gold.yaml"
        script.write_text(yaml.safe_dump(_gold_script(task)), encoding="utf-8")
        return f"scripted:{script}"


def _gold_script(task: EvalTask) -> dict[str, object]:
    """Write the gold patch, apply it, finish; finish again in each fix round."""
    apply = f"git apply --whitespace=nowarn {GOLD_FILE} && rm {GOLD_FILE}"

    def call(name: str, **arguments: str) -> dict[str, object]:
        return {"tool_calls": [{"name": name, "arguments": arguments}]}

    turns = [
        call("write", path=GOLD_FILE, content=task.patch),
        call("bash", command=apply),
        call("finish", summary=f"applied the upstream fix of {task.instance_id}"),
        *(call("finish", summary="the upstream fix stands") for _ in range(6)),
    ]
    return {"model": GOLD, "turns": turns}


def _nodes(state: RunState) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for step in state.steps:
        spent = max(step.ended - step.started - step.paused, 0.0)
        seconds[step.node] = seconds.get(step.node, 0.0) + spent
    return seconds
