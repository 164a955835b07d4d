"""What a failing check shows its fixer: the failing tests its output names (pytest,
unittest, jest/vitest, go test, cargo test, TAP, JUnit XML) with their messages, then the
end of its output within a budget; and why it failed when the exit code does not say."""

from golem.blueprint.reports.junit import junit_paths
from golem.blueprint.reports.report import (
    REPORT_BUDGET,
    FailureReport,
    failure_report,
    find_failures,
    output_report,
)
from golem.blueprint.reports.result import check_result, failure_reason

__all__ = [
    "REPORT_BUDGET",
    "FailureReport",
    "check_result",
    "failure_reason",
    "failure_report",
    "find_failures",
    "junit_paths",
    "output_report",
]
