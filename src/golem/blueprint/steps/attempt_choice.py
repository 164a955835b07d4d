"""Which best-of-N attempt wins, and why each lost: the order, the model judge's call.

The order: verified before not; then the most passing checks; then, among the verified
attempts tied there and with the judge on (the agent node's ``judge``, else ``[engine]
judge_attempts``), the model judge's choice (``attempt_judge``); then the smallest diff;
then the lowest number. A judge's answer that cannot be used leaves the rest of the order to
decide, and says why in the winner's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from golem.agent import Budget
from golem.blueprint.execution import Execution
from golem.blueprint.model import AgentNode
from golem.blueprint.state import AttemptRecord
from golem.blueprint.steps.attempt_judge import Candidate, judge_attempts
from golem.core.errors import BudgetSpent, GolemError
from golem.forge import GitRepo

__all__ = ["Contender", "Judged", "judge_tie", "rank", "why_lost", "why_won"]


@dataclass(frozen=True)
class Contender:
    """A finished attempt: its record and its checkout."""

    record: AttemptRecord
    repo: GitRepo


@dataclass(frozen=True)
class Judged:
    """The judge's word on a tie: the chosen attempt's number (None: the order decides),
    the attempts it chose among, and its reason or why it was not used."""

    chosen: int | None
    among: list[int]
    reason: str


def rank(record: AttemptRecord) -> tuple[bool, int, int, int]:
    """The deterministic order: the lowest first."""
    diff = record.diff_lines if record.diff_lines is not None else 1 << 62
    return (record.status != "verified", -record.passing, diff, record.number)


def judging(ex: Execution, node: AgentNode) -> bool:
    """Whether the model judge breaks a tie of verified attempts for ``node``."""
    return node.judge if node.judge is not None else ex.config.engine.judge_attempts


async def judge_tie(ex: Execution, node: AgentNode, ranked: list[Contender]) -> Judged | None:
    """The judge's choice among the verified attempts tied with the first on their passing
    checks (None: the judge is off, or there is no tie to break). Its cost is the run's."""
    first = ranked[0].record if ranked else None
    if first is None or first.status != "verified" or not judging(ex, node):
        return None
    tied = [
        c for c in ranked if c.record.status == "verified" and c.record.passing == first.passing
    ]
    if len(tied) < 2:
        return None
    among = [c.record.number for c in tied]
    try:
        budget = ex.step_budget(Budget(turns=1))
    except BudgetSpent as spent:
        return Judged(None, among, f"the judge was not asked: {spent.reason}")
    try:
        model = ex.model(node.model)  # an external CLI agent's name may be no API model's
        candidates = [
            Candidate(
                number=c.record.number,
                diff=await c.repo.worktree_diff(),
                diff_lines=c.record.diff_lines or 0,
                checks=c.record.checks,
            )
            for c in tied
        ]
    except GolemError as exc:
        return Judged(None, among, f"the judge was not asked: {exc.message}")
    judgement = await judge_attempts(
        model, ex.state.task_text, candidates, budget=budget, mask=ex.secrets.mask
    )
    ex.charge(judgement.usage, judgement.cost_usd, 0)
    ex.save()
    named = ", ".join(str(number) for number in among)
    if judgement.chosen is None:
        ex.note(f"the model judge of attempts {named} was not used: {judgement.reason}", node.id)
    else:
        ex.note(
            f"the model judge chose attempt {judgement.chosen} of {named} "
            f"(${judgement.cost_usd:.4f})",
            node.id,
        )
    return Judged(judgement.chosen, among, judgement.reason)


def why_won(record: AttemptRecord, finished: int, judged: Judged | None) -> str:
    """The winner's verdict (the judge's reason is kept apart, in ``judged``)."""
    kind = "verified" if record.status == "verified" else "not verified, the best of them"
    verdict = (
        f"{kind}: {record.passing} of {len(record.checks)} checks passed, "
        f"{record.diff_lines} lines changed ({finished} finished)"
    )
    if judged is None:
        return verdict
    others = ", ".join(str(n) for n in judged.among if n != record.number)
    if judged.chosen == record.number:
        return f"{verdict}; the model judge chose it over attempt {others}"
    return f"{verdict}; the model judge's answer was not used ({judged.reason})"


def why_lost(record: AttemptRecord, best: AttemptRecord, judged: Judged | None) -> str:
    """Why a finished attempt lost to ``best``."""
    if judged is not None and judged.chosen == best.number and record.number in judged.among:
        return (
            f"the model judge chose attempt {best.number} (the same checks passed), "
            f"with {best.diff_lines} lines changed to its {record.diff_lines}"
        )
    if record.status != "verified" and best.status == "verified":
        return f"not verified, attempt {best.number} was"
    if record.passing != best.passing:
        return (
            f"fewer passing checks ({record.passing}) than attempt {best.number} ({best.passing})"
        )
    if record.diff_lines != best.diff_lines:
        return (
            f"a larger diff ({record.diff_lines} lines) than attempt {best.number} "
            f"({best.diff_lines})"
        )
    return f"the same checks and diff size as attempt {best.number}, which comes first"
