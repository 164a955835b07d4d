"""golem.checks: verification, the repository's own checks. Finding them as its CI finds
them (``detect``, or its ``.golem.toml``), reading what they print (``reports``), the box's
tree around them (``tree``), judging a failure against the base commit (``concern``), and
the result model."""

from golem.checks.concern import MAX_CHANGED, Concern, test_paths
from golem.checks.contracts import (
    CHECK_STEPS,
    STEPS,
    CheckResult,
    DetectedCommand,
    RepoConventions,
    Step,
    TestFailure,
    TestProgress,
)
from golem.checks.conventions import (
    CONVENTIONS_FILE,
    ConventionsFile,
    load_conventions,
    render_conventions,
)
from golem.checks.describe import describe_failure, describe_failures
from golem.checks.detect import checks_served, detect_conventions
from golem.checks.detect.ecosystem import known_registries
from golem.checks.history import (
    baseline_key,
    flaky_before,
    flaky_file,
    load_baseline,
    record_flaky,
    store_baseline,
)
from golem.checks.judge import (
    already_failing,
    held_against,
    judge,
    may_be_flaky,
    unexplained,
    unverified_reason,
)
from golem.checks.live import LiveOutput
from golem.checks.reports import (
    MAX_XML,
    REPORT_BUDGET,
    FailureReport,
    TestOutcomes,
    check_result,
    failure_reason,
    failure_report,
    find_failures,
    find_outcomes,
    junit_paths,
    named_reports,
    output_report,
)
from golem.checks.run import CHECK_TIMEOUT, run_check
from golem.checks.tree import changed_between, fingerprint, remove_made, restore

__all__ = [
    "CHECK_STEPS",
    "CHECK_TIMEOUT",
    "CONVENTIONS_FILE",
    "MAX_CHANGED",
    "MAX_XML",
    "REPORT_BUDGET",
    "STEPS",
    "CheckResult",
    "Concern",
    "ConventionsFile",
    "DetectedCommand",
    "FailureReport",
    "LiveOutput",
    "RepoConventions",
    "Step",
    "TestFailure",
    "TestOutcomes",
    "TestProgress",
    "already_failing",
    "baseline_key",
    "changed_between",
    "check_result",
    "checks_served",
    "describe_failure",
    "describe_failures",
    "detect_conventions",
    "failure_reason",
    "failure_report",
    "find_failures",
    "find_outcomes",
    "fingerprint",
    "flaky_before",
    "flaky_file",
    "held_against",
    "judge",
    "junit_paths",
    "known_registries",
    "load_baseline",
    "load_conventions",
    "may_be_flaky",
    "named_reports",
    "output_report",
    "record_flaky",
    "remove_made",
    "render_conventions",
    "restore",
    "run_check",
    "store_baseline",
    "test_paths",
    "unexplained",
    "unverified_reason",
]
