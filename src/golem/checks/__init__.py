"""golem.checks: verification, the repository's own checks.

- the conventions: its ``.golem.toml``, or its checks found as its CI finds them
  (``load_conventions``, ``detect_conventions``), and which of them a failed
  preparation drops (``dropped_by``);
- running one in a box, its output live (``run_check``), reading what it printed and the
  JUnit XML it wrote into its result (``CheckResult``, ``find_outcomes``);
- the box's tree around the checks (``fingerprint``, ``changed_between``, ``restore``);
- judging a failure against the base commit, the task and the change (``judge``,
  ``Concern``), flaky or not (``may_be_flaky``, and the history kept between runs), and
  whether anything verified the change (``unverified_reason``);
- failed checks in words (``describe_failures``);
- the services the checks need, started in a box with a container engine
  (``start_services``) and how to reach them (``reach``).

The blueprint's steps call these with the run's box, secrets and state, and make the run's
events of what they return (docs/checks.md).
"""

from golem.checks.concern import MAX_CHANGED, Concern
from golem.checks.contracts import (
    CHECK_STEPS,
    STEPS,
    CheckResult,
    DetectedCommand,
    RepoConventions,
    Service,
    Step,
    TestFailure,
    TestProgress,
)
from golem.checks.conventions import (
    CONVENTIONS_FILE,
    load_conventions,
    render_conventions,
)
from golem.checks.describe import describe_failure, describe_failures
from golem.checks.detect import detect_conventions
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
    held_against,
    judge,
    may_be_flaky,
    unverified_reason,
)
from golem.checks.prepare import dropped_by, why_not_run
from golem.checks.reports import (
    find_outcomes,
    named_reports,
)
from golem.checks.run import LiveOutput, run_check
from golem.checks.services import reach, start_services
from golem.checks.tree import changed_between, fingerprint, remove_made, restore

__all__ = [
    "CHECK_STEPS",
    "CONVENTIONS_FILE",
    "MAX_CHANGED",
    "STEPS",
    "CheckResult",
    "Concern",
    "DetectedCommand",
    "LiveOutput",
    "RepoConventions",
    "Service",
    "Step",
    "TestFailure",
    "TestProgress",
    "baseline_key",
    "changed_between",
    "describe_failure",
    "describe_failures",
    "detect_conventions",
    "dropped_by",
    "find_outcomes",
    "fingerprint",
    "flaky_before",
    "flaky_file",
    "held_against",
    "judge",
    "known_registries",
    "load_baseline",
    "load_conventions",
    "may_be_flaky",
    "named_reports",
    "reach",
    "record_flaky",
    "remove_made",
    "render_conventions",
    "restore",
    "run_check",
    "start_services",
    "store_baseline",
    "unverified_reason",
    "why_not_run",
]
