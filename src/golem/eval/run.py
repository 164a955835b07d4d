"""``golem eval run``: every attempt at every task of a task file, ``parallel`` at a time,
each kept in the results directory as it finishes; what is finished there is never run
again, so an interrupted evaluation resumes with what is left."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from golem.core.config import GolemConfig
from golem.core.errors import EvalError
from golem.eval.attempt import AttemptRunner
from golem.eval.results import Attempt, EvalSettings, ResultsDir
from golem.eval.tasks import EvalTask
from golem.sandbox import Engine
from golem.store import Store

__all__ = ["Evaluation"]


class Evaluation:
    """The attempts an evaluation has left, and running them."""

    def __init__(
        self,
        config: GolemConfig,
        engine: Engine,
        store: Store,
        tasks: list[EvalTask],
        results: ResultsDir,
        settings: EvalSettings,
        *,
        parallel: int,
        repo_url: str,
        total_usd: float | None = None,
        limit: int | None = None,
        told: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.engine = engine
        self.tasks = tasks
        self.results = results
        self.settings = settings
        self.parallel = max(1, parallel)
        self.total_usd = total_usd
        self.limit = limit
        self.told = told
        self.attempts = AttemptRunner(
            config, engine, store, settings, results=results.path, repo_url=repo_url
        )
        self.stopped: str | None = None
        """Why attempts were left for another time (the total budget spent), if they were."""

    def left(self) -> list[tuple[EvalTask, int]]:
        """The attempts not finished yet, task by task (at most ``limit``)."""
        todo = [
            (task, number)
            for task in self.tasks
            for number in range(1, self.settings.attempts + 1)
            if not self.results.finished(task.instance_id, number)
        ]
        return todo if self.limit is None else todo[: self.limit]

    async def run(self) -> list[Attempt]:
        """Run what is left; every attempt recorded so far."""
        await self.engine.prune()  # the boxes of an evaluation that was killed
        gate = asyncio.Semaphore(self.parallel)

        async def one(task: EvalTask, number: int) -> None:
            async with gate:
                if self._spent():
                    return
                try:
                    attempt = await self.attempts.run(task, number)
                except EvalError as exc:
                    attempt = Attempt(
                        instance_id=task.instance_id, attempt=number, not_run=exc.message
                    )
                self.results.keep(attempt)
                if self.told is not None:
                    self.told(attempt)

        async with asyncio.TaskGroup() as group:
            for task, number in self.left():
                group.create_task(one(task, number))
        return self.results.attempts()

    def _spent(self) -> bool:
        if self.total_usd is None:
            return False
        spent = sum(attempt.cost_usd for attempt in self.results.attempts())
        if spent < self.total_usd:
            return False
        self.stopped = (
            f"the evaluation's --total-usd ({self.total_usd:g}) is spent (${spent:.2f}): "
            "run it again with a larger one to go on"
        )
        return True
