"""Each test's outcome in what a check printed: the failing tests (as the failure report
names them) and the passing ones, where the output names those (pytest with ``-rA`` or
``-v``, unittest with ``-v``, ``go test -v``, cargo test, TAP, JUnit XML). What a
benchmark's fail-to-pass and pass-to-pass tests are judged by (``golem eval``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from golem.checks.reports.junit import junit_passes
from golem.checks.reports.report import FORMATS, find_failures
from golem.core.ansi import plain

__all__ = ["TestOutcomes", "find_outcomes"]


@dataclass(frozen=True)
class TestOutcomes:
    """The tests a check's output says passed and failed; ``names_passes``: whether its
    format names passing tests at all (when not, a test not named failing may have passed
    or not run)."""

    __test__ = False  # not a pytest class

    passed: frozenset[str]
    failed: frozenset[str]
    names_passes: bool


def find_outcomes(command: str, text: str, junit: Sequence[str] = ()) -> TestOutcomes:
    """The outcomes in ``text`` (a check's whole output) by every format it looks like,
    and in the JUnit documents ``junit``; a test named both passing and failing (a rerun,
    two runners) failed."""
    text = plain(text)
    failed = {failure.name for failure in find_failures(command, text, junit)}
    recognised = [f for f in FORMATS if f.passes is not None and f.recognises(text)]
    passed = {name for f in recognised if f.passes is not None for name in f.passes(text)}
    passed.update(junit_passes(junit))
    return TestOutcomes(
        passed=frozenset(passed - failed),
        failed=frozenset(failed),
        names_passes=bool(recognised or junit),
    )
