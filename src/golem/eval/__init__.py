"""golem.eval: measure golem on a team's own repositories before trusting it.

``TaskMaker`` turns changes that touched both source and tests into tasks (SWE-bench's
fields, golem's beside them); ``Evaluation`` runs golem's blueprint on every task with the
hidden tests applied only after the agent is done, keeping each attempt as it finishes;
``build_report`` and ``compare`` say how often golem resolved them, at what cost, and how
often its own verification agreed with the hidden tests.

What runs golem (``TaskMaker``, ``Evaluation``, ``Testbed``...) is imported when first
asked for: reading and reporting results needs none of the engine, the store or the models.
"""

from typing import TYPE_CHECKING

from golem.eval.compare import Comparison, compare
from golem.eval.html import comparison_html, report_html
from golem.eval.judge import CommandOutcome, Score, TestRun, derive, score
from golem.eval.paths import is_test_path, split_paths
from golem.eval.render import print_comparison, print_report
from golem.eval.report import EvalReport, build_report
from golem.eval.results import Attempt, EvalSettings, ResultsDir
from golem.eval.tasks import EvalTask, from_record, read_tasks, write_tasks

if TYPE_CHECKING:
    from golem.eval.attempt import GOLD, AttemptRunner
    from golem.eval.candidates import (
        Candidate,
        from_commits,
        from_merged_pull_requests,
        slug,
    )
    from golem.eval.make import LeftOut, Made, TaskMaker
    from golem.eval.repos import Sources
    from golem.eval.run import Evaluation
    from golem.eval.testbed import Testbed

__all__ = [
    "GOLD",
    "Attempt",
    "AttemptRunner",
    "Candidate",
    "CommandOutcome",
    "Comparison",
    "EvalReport",
    "EvalSettings",
    "EvalTask",
    "Evaluation",
    "LeftOut",
    "Made",
    "ResultsDir",
    "Score",
    "Sources",
    "TaskMaker",
    "TestRun",
    "Testbed",
    "build_report",
    "compare",
    "comparison_html",
    "derive",
    "from_commits",
    "from_merged_pull_requests",
    "from_record",
    "is_test_path",
    "print_comparison",
    "print_report",
    "read_tasks",
    "report_html",
    "score",
    "slug",
    "split_paths",
    "write_tasks",
]

_LAZY = {
    "GOLD": "golem.eval.attempt",
    "AttemptRunner": "golem.eval.attempt",
    "Candidate": "golem.eval.candidates",
    "from_commits": "golem.eval.candidates",
    "from_merged_pull_requests": "golem.eval.candidates",
    "slug": "golem.eval.candidates",
    "LeftOut": "golem.eval.make",
    "Made": "golem.eval.make",
    "TaskMaker": "golem.eval.make",
    "Sources": "golem.eval.repos",
    "Evaluation": "golem.eval.run",
    "Testbed": "golem.eval.testbed",
}


def __getattr__(name: str) -> object:
    """The names that run golem, imported when first asked for."""
    if name in _LAZY:
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
