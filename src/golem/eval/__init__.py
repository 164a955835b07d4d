"""golem.eval: measure golem on a team's own repositories before trusting it.

``TaskMaker`` turns changes that touched both source and tests into tasks (SWE-bench's
fields, golem's beside them); ``Evaluation`` runs golem's blueprint on every task with the
hidden tests applied only after the agent is done, keeping each attempt as it finishes;
``build_report`` and ``compare`` say how often golem resolved them, at what cost, and how
often its own verification agreed with the hidden tests.
"""

from golem.eval.attempt import GOLD, AttemptRunner
from golem.eval.candidates import Candidate, from_commits, from_merged_pull_requests, slug
from golem.eval.compare import Comparison, compare
from golem.eval.html import comparison_html, report_html
from golem.eval.judge import Score, derive, score
from golem.eval.make import LeftOut, Made, TaskMaker
from golem.eval.paths import is_test_path, split_paths
from golem.eval.render import print_comparison, print_report
from golem.eval.report import EvalReport, build_report
from golem.eval.repos import Sources
from golem.eval.results import Attempt, EvalSettings, ResultsDir
from golem.eval.run import Evaluation
from golem.eval.tasks import EvalTask, from_record, read_tasks, write_tasks
from golem.eval.testbed import Testbed, TestRun

__all__ = [
    "GOLD",
    "Attempt",
    "AttemptRunner",
    "Candidate",
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
