"""An evaluation's report: per task and in total, how often golem resolved the tasks (the
hidden tests' word), what its own verification said, what it cost and where the time went;
and how often the two agreed (the confusion matrix of golem's verdicts against the hidden
tests: a verified run that fails them, or an escalated run that passes them, is a verdict
a team could not trust).

``pass@k`` is the unbiased estimate of the chance that at least one of k attempts resolves
a task (Chen et al., 2021), from each task's attempts.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import mean
from typing import Literal

from pydantic import BaseModel, Field

from golem.core.errors import TaskFileError
from golem.eval.results import Attempt, EvalSettings, ResultsDir, Verdict
from golem.eval.tasks import EvalTask, read_tasks

__all__ = ["VERDICTS", "Agreement", "EvalReport", "TaskSummary", "Totals", "build_report"]

VERDICTS: tuple[Verdict, ...] = ("verified", "escalated", "unverified", "failed")
Judged = Literal["resolved", "unresolved"]


class TaskSummary(BaseModel):
    """One task's attempts."""

    instance_id: str
    attempts: int = Field(description="Attempts run (not counting those not run).")
    resolved: int
    not_run: str | None = Field(None, description="Why none of its attempts ran, if none did.")
    verdicts: dict[str, int] = Field(default_factory=dict)
    pass_at_k: float | None = None
    cost_usd: float = 0.0
    turns: float = 0.0
    seconds: float = 0.0


class Agreement(BaseModel):
    """golem's verdicts against the hidden tests: ``matrix[verdict][resolved|unresolved]``."""

    matrix: dict[str, dict[str, int]]
    judged: int = Field(description="Attempts golem verified or escalated.")
    agreed: int = Field(description="Verified and resolved, or escalated and unresolved.")
    rate: float | None = Field(None, description="agreed / judged.")
    verified_unresolved: int = Field(description="Verified, yet the hidden tests fail.")
    escalated_resolved: int = Field(description="Escalated, yet the hidden tests pass.")
    verified_precision: float | None = Field(
        None, description="Of the verified attempts, the share the hidden tests pass."
    )


class Totals(BaseModel):
    """The whole evaluation."""

    tasks: int
    attempts: int = Field(description="Attempts run.")
    not_run: int = Field(description="Attempts not run (their repository or environment).")
    resolved: int
    resolve_rate: float | None = Field(None, description="resolved / attempts.")
    k: int
    pass_at_1: float | None = None
    pass_at_k: float | None = None
    verdicts: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    mean_cost_usd: float | None = None
    mean_turns: float | None = None
    mean_seconds: float | None = None
    mean_tests_seconds: float | None = None
    mean_node_seconds: dict[str, float] = Field(
        default_factory=dict, description="Where a run's time went, node by node, on average."
    )


class EvalReport(BaseModel):
    """Everything ``golem eval report`` tells of a results directory."""

    label: str
    settings: EvalSettings
    totals: Totals
    agreement: Agreement
    tasks: list[TaskSummary]
    attempts: list[Attempt]
    gold: dict[str, str] = Field(default_factory=dict, description="Gold patches, by task.")


def build_report(results: ResultsDir) -> EvalReport:
    """The report of the results directory (its task file, when still there, gives the
    gold patches shown beside the agent's)."""
    settings = results.settings()
    if settings is None:
        raise TaskFileError(f"{results.path} holds no evaluation: run `golem eval run` first")
    attempts = results.attempts()
    gold = {task.instance_id: task.patch for task in _tasks(Path(settings.tasks))}
    ids = list(dict.fromkeys([*gold, *(a.instance_id for a in attempts)]))
    by_task = {i: [a for a in attempts if a.instance_id == i] for i in ids}
    summaries = [_summary(i, by_task[i], settings.attempts) for i in ids if by_task[i]]
    ran = [a for a in attempts if a.not_run is None]
    return EvalReport(
        label=settings.label or f"{settings.model} · {settings.blueprint}",
        settings=settings,
        totals=_totals(summaries, attempts, settings.attempts),
        agreement=_agreement(ran),
        tasks=summaries,
        attempts=attempts,
        gold=gold,
    )


def _tasks(file: Path) -> list[EvalTask]:
    try:
        return read_tasks(file)
    except TaskFileError:
        return []  # moved or changed since: the report goes without gold patches


def pass_at(n: int, c: int, k: int) -> float:
    """The chance at least one of ``k`` of ``n`` attempts, ``c`` of them resolved, resolves."""
    k = min(k, n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _summary(instance_id: str, attempts: list[Attempt], k: int) -> TaskSummary:
    ran = [a for a in attempts if a.not_run is None]
    resolved = sum(1 for a in ran if a.resolved)
    verdicts: dict[str, int] = {}
    for attempt in ran:
        if attempt.verdict is not None:
            verdicts[attempt.verdict] = verdicts.get(attempt.verdict, 0) + 1
    return TaskSummary(
        instance_id=instance_id,
        attempts=len(ran),
        resolved=resolved,
        not_run=None if ran else next((a.not_run for a in attempts if a.not_run), None),
        verdicts=verdicts,
        pass_at_k=pass_at(len(ran), resolved, k) if ran else None,
        cost_usd=sum(a.cost_usd for a in ran),
        turns=_mean([a.turns for a in ran]) or 0.0,
        seconds=_mean([a.seconds for a in ran]) or 0.0,
    )


def _totals(tasks: list[TaskSummary], attempts: list[Attempt], k: int) -> Totals:
    ran = [a for a in attempts if a.not_run is None]
    resolved = sum(1 for a in ran if a.resolved)
    tried = [t for t in tasks if t.attempts]
    verdicts = {v: sum(1 for a in ran if a.verdict == v) for v in VERDICTS}
    nodes: dict[str, list[float]] = {}
    for attempt in ran:
        for node, seconds in attempt.nodes.items():
            nodes.setdefault(node, []).append(seconds)
    return Totals(
        tasks=len(tasks),
        attempts=len(ran),
        not_run=len(attempts) - len(ran),
        resolved=resolved,
        resolve_rate=resolved / len(ran) if ran else None,
        k=k,
        pass_at_1=_mean([t.resolved / t.attempts for t in tried]),
        pass_at_k=_mean([t.pass_at_k or 0.0 for t in tried]),
        verdicts=verdicts,
        cost_usd=sum(a.cost_usd for a in ran),
        mean_cost_usd=_mean([a.cost_usd for a in ran]),
        mean_turns=_mean([a.turns for a in ran]),
        mean_seconds=_mean([a.seconds for a in ran]),
        mean_tests_seconds=_mean([a.tests_seconds for a in ran]),
        mean_node_seconds={node: sum(s) / len(ran) for node, s in nodes.items()},
    )


def _agreement(ran: list[Attempt]) -> Agreement:
    matrix = {v: {"resolved": 0, "unresolved": 0} for v in VERDICTS}
    for attempt in ran:
        if attempt.verdict is not None:
            matrix[attempt.verdict]["resolved" if attempt.resolved else "unresolved"] += 1
    verified, escalated = matrix["verified"], matrix["escalated"]
    judged = sum(verified.values()) + sum(escalated.values())
    agreed = verified["resolved"] + escalated["unresolved"]
    all_verified = sum(verified.values())
    return Agreement(
        matrix=matrix,
        judged=judged,
        agreed=agreed,
        rate=agreed / judged if judged else None,
        verified_unresolved=verified["unresolved"],
        escalated_resolved=escalated["resolved"],
        verified_precision=verified["resolved"] / all_verified if all_verified else None,
    )


def _mean(values: list[float] | list[int]) -> float | None:
    return mean(values) if values else None
