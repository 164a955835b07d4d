"""What a failing check shows its fixer: the failing tests its output names (pytest,
unittest, jest/vitest, go test, cargo test, TAP, JUnit XML) with their messages, then the
end of its output within a budget; and why it failed when the exit code does not say. Each
test's outcome, passing ones too where the output names them (``find_outcomes``)."""

from golem.checks.reports.junit import MAX_XML, junit_paths, named_reports
from golem.checks.reports.report import (
    REPORT_BUDGET,
    FailureReport,
    TestOutcomes,
    failure_report,
    find_failures,
    find_outcomes,
    output_report,
)
from golem.checks.reports.result import check_result, failure_reason

__all__ = [
    "MAX_XML",
    "REPORT_BUDGET",
    "FailureReport",
    "TestOutcomes",
    "check_result",
    "failure_reason",
    "failure_report",
    "find_failures",
    "find_outcomes",
    "junit_paths",
    "named_reports",
    "output_report",
]
