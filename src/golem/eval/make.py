"""``golem eval make``: changes that touched both source and tests become tasks, as SWE-bench
makes them. A change's test files are its hidden test patch, the rest its gold patch; its
tests run in golem's boxes on the base with the test patch laid over it, then on the change
itself, and the tests that fail the first time and pass the second are its FAIL_TO_PASS.
A change whose tests do not is left out, with the reason."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from golem.core.config import GolemConfig
from golem.core.errors import GolemError
from golem.eval.candidates import Candidate
from golem.eval.judge import derive
from golem.eval.paths import split_paths
from golem.eval.repos import Sources, Trees, new_bare
from golem.eval.tasks import EvalTask
from golem.eval.testbed import Testbed, naming_command, naming_env

__all__ = ["LeftOut", "Made", "TaskMaker"]


@dataclass(frozen=True)
class LeftOut:
    """A change that made no task, and why."""

    instance_id: str
    source: str
    reason: str


@dataclass
class Made:
    """What ``make`` found: the new tasks, and the changes left out."""

    tasks: list[EvalTask] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)


class TaskMaker:
    """Makes tasks of a repository's changes, ``parallel`` at a time, on ``testbed``."""

    def __init__(
        self,
        config: GolemConfig,
        sources: Sources,
        testbed: Testbed,
        workdir: Path,
        *,
        parallel: int = 1,
        told: Callable[[EvalTask | LeftOut], None] | None = None,
    ) -> None:
        self.config = config
        self.sources = sources
        self.testbed = testbed
        self.workdir = workdir
        self.parallel = max(1, parallel)
        self.told = told

    async def make(self, url: str, repo: str, candidates: list[Candidate]) -> Made:
        """Tasks of ``candidates`` (the repository ``repo``, cloned from ``url``), in the
        candidates' order."""
        gate = asyncio.Semaphore(self.parallel)

        async def one(candidate: Candidate) -> EvalTask | LeftOut:
            async with gate:
                try:
                    made = await self._task(url, repo, candidate)
                except GolemError as exc:
                    made = LeftOut(candidate.instance_id, candidate.source, exc.message)
                if self.told is not None:
                    self.told(made)
                return made

        done = await asyncio.gather(*(one(candidate) for candidate in candidates))
        return Made(
            tasks=[item for item in done if isinstance(item, EvalTask)],
            left_out=[item for item in done if isinstance(item, LeftOut)],
        )

    async def _task(self, url: str, repo: str, candidate: Candidate) -> EvalTask | LeftOut:
        def left(reason: str) -> LeftOut:
            return LeftOut(candidate.instance_id, candidate.source, reason)

        if not candidate.statement.strip():
            return left("it says nothing of what to do (an empty message and no issue)")
        source = await self.sources.have(url, candidate.change)
        place = self.workdir / candidate.instance_id
        shutil.rmtree(place, ignore_errors=True)
        try:
            trees = Trees(await new_bare(place / "repo.git"))
            await trees.fetch(source.path, candidate.change, "refs/golem/change")
            tests, code = split_paths(await trees.changed(candidate.base, candidate.change))
            if not tests:
                return left("it changes no test file: nothing could tell a fix from another")
            if not code:
                return left("it changes only tests: there is no fix to make")
            conventions = await self.sources.conventions_at(url, candidate.base)
            commands = [naming_command(command) for command in conventions.test]
            if not commands:
                return left(
                    "golem finds no test command at its base commit: name one in the "
                    "repository's .golem.toml ([commands] test)"
                )
            env = naming_env(self.config.engine.defaults.env, conventions.env)
            before = await trees.overlay(candidate.base, candidate.change, tests)
            with_tests = await trees.commit(before, candidate.base, "the hidden tests", "main")
            first = await self.testbed.run(
                place / "repo.git", commands, env, f"{candidate.instance_id}-before"
            )
            fixed = await trees.tree_of(candidate.change)
            await trees.commit(fixed, with_tests, "the fix", "main")
            second = await self.testbed.run(
                place / "repo.git", commands, env, f"{candidate.instance_id}-after"
            )
            derived = derive(first, second)
            if derived.why_not is not None:
                return left(derived.why_not)
            return EvalTask(
                instance_id=candidate.instance_id,
                repo=repo,
                base_commit=candidate.base,
                patch=await trees.diff(candidate.base, candidate.change, code),
                test_patch=await trees.diff(candidate.base, candidate.change, tests),
                problem_statement=candidate.statement,
                FAIL_TO_PASS=derived.fail_to_pass,
                PASS_TO_PASS=derived.pass_to_pass,
                created_at=candidate.created_at,
                environment_setup_commit=candidate.base,
                hints_text=candidate.hints,
                golem_remote=url,
                golem_test_commands=commands,
                golem_must_pass=derived.must_pass,
                golem_source=candidate.source,
            )
        finally:
            shutil.rmtree(place, ignore_errors=True)
