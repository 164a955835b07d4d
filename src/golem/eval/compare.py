"""``golem eval compare A B``: two evaluations of the same tasks side by side (two models,
two blueprints, two golem versions), task by task and in total."""

from __future__ import annotations

from pydantic import BaseModel, Field

from golem.eval.report import EvalReport, TaskSummary

__all__ = ["ComparedTask", "Comparison", "compare"]


class ComparedTask(BaseModel):
    """One task in both evaluations (None where one did not run it)."""

    instance_id: str
    a: TaskSummary | None
    b: TaskSummary | None

    @property
    def change(self) -> str:
        """``gained``, ``lost``, ``same`` (by whether any attempt resolved it), or
        ``only a``/``only b``."""
        if self.a is None or not self.a.attempts:
            return "only b"
        if self.b is None or not self.b.attempts:
            return "only a"
        before, after = self.a.resolved > 0, self.b.resolved > 0
        return "same" if before == after else ("gained" if after else "lost")


class Comparison(BaseModel):
    """Two reports and their tasks, aligned by instance id."""

    a: EvalReport
    b: EvalReport
    differs: list[str] = Field(description="The settings that differ (what is compared).")
    tasks: list[ComparedTask]
    gained: int = Field(description="Tasks B resolved and A did not.")
    lost: int = Field(description="Tasks A resolved and B did not.")


def compare(a: EvalReport, b: EvalReport) -> Comparison:
    """``a`` and ``b`` side by side."""
    fields = ("model", "blueprint", "golem_version", "attempts", "budget_usd", "tasks_sha256")
    differs = [
        f"{name}: {getattr(a.settings, name)} / {getattr(b.settings, name)}"
        for name in fields
        if getattr(a.settings, name) != getattr(b.settings, name)
    ]
    ids = list(
        dict.fromkeys([*(t.instance_id for t in a.tasks), *(t.instance_id for t in b.tasks)])
    )
    by_a = {t.instance_id: t for t in a.tasks}
    by_b = {t.instance_id: t for t in b.tasks}
    tasks = [ComparedTask(instance_id=i, a=by_a.get(i), b=by_b.get(i)) for i in ids]
    return Comparison(
        a=a,
        b=b,
        differs=differs,
        tasks=tasks,
        gained=sum(1 for t in tasks if t.change == "gained"),
        lost=sum(1 for t in tasks if t.change == "lost"),
    )
