"""A failing check as its fixer reads it: the failing tests its output (or its JUnit XML)
names, each with its message, then the end of its standard output and error, each in its
share of a budget of characters, without colours or redrawn progress bars. And each test's
outcome in what a check printed: the failing tests and the passing ones, where the output
names those (pytest with ``-rA`` or ``-v``, unittest with ``-v``, ``go test -v``, cargo
test, TAP, JUnit XML): what a benchmark's fail-to-pass and pass-to-pass tests are judged
by (``golem eval``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from golem.checks.contracts import TestFailure
from golem.checks.reports.cargo import CARGO_TEST
from golem.checks.reports.doctests import DOCTEST
from golem.checks.reports.format import Format, first_lines, last_lines, merge
from golem.checks.reports.gotest import GO_TEST
from golem.checks.reports.jest import JEST
from golem.checks.reports.junit import junit_failures, junit_passes
from golem.checks.reports.mocha import MOCHA
from golem.checks.reports.pytest import PYTEST
from golem.checks.reports.tap import TAP
from golem.checks.reports.unittest import UNITTEST
from golem.core.ansi import plain

__all__ = [
    "FORMATS",
    "REPORT_BUDGET",
    "FailureReport",
    "TestOutcomes",
    "failure_report",
    "find_failures",
    "find_outcomes",
    "output_report",
]

REPORT_BUDGET = 6000
MAX_LISTED = 20
MAX_KEPT = 1000
"""Failures a result keeps (by name: the baseline compares them); past ``MAX_LISTED``,
without their messages."""
FORMATS: tuple[Format, ...] = (
    PYTEST,
    UNITTEST,
    DOCTEST,
    JEST,
    MOCHA,
    GO_TEST,
    CARGO_TEST,
    TAP,
)


@dataclass(frozen=True)
class FailureReport:
    """The failing tests found, and the report's text (within its budget)."""

    failures: list[TestFailure] = field(default_factory=list)
    text: str = ""


def failure_report(
    command: str,
    stdout: str,
    stderr: str,
    *,
    junit: Sequence[str] = (),
    budget: int = REPORT_BUDGET,
) -> FailureReport:
    """What a failed check printed, made readable: the failing tests (from the output's
    own format, recognised by what it looks like; else from ``junit`` documents), then
    the end of each stream, all in at most ``budget`` characters."""
    out, err = plain(stdout), plain(stderr)
    failures = find_failures(command, f"{out}\n{err}", junit)
    listing = _listing(failures, budget // 2) if failures else ""
    room = budget - len(listing) - 2
    text = "\n\n".join(
        part for part in (listing, _tails(out, err, room, labelled=bool(listing))) if part
    )
    kept = failures[:MAX_LISTED] + [
        failure.model_copy(update={"message": ""}) for failure in failures[MAX_LISTED:MAX_KEPT]
    ]
    return FailureReport(failures=kept, text=text[:budget])


def output_report(stdout: str, stderr: str, *, budget: int = REPORT_BUDGET) -> str:
    """The end of what a check printed (a check that passed: no failures to look for)."""
    return _tails(plain(stdout), plain(stderr), budget, labelled=False)[:budget]


def find_failures(command: str, text: str, junit: Sequence[str] = ()) -> list[TestFailure]:
    """The failing tests in ``text`` by every format it looks like (those ``command``
    names first); the JUnit documents' when the output names none."""
    hinted = sorted(FORMATS, key=lambda f: not any(hint in command for hint in f.hints))
    found = [failure for f in hinted if f.recognises(text) for failure in f.parse(text)]
    return merge(found) or junit_failures(junit)


def _listing(failures: list[TestFailure], room: int) -> str:
    header = f"Failing tests ({len(failures)}):"
    each = max(160, room // min(len(failures), MAX_LISTED))
    lines, used, listed = [header], len(header), 0
    for failure in failures[:MAX_LISTED]:
        entry = _entry(failure, each)
        if used + len(entry) + 1 > room and listed:
            break
        lines.append(entry[: room - used - 1])
        used += len(lines[-1]) + 1
        listed += 1
    if rest := failures[listed:]:
        names = ", ".join(failure.name for failure in rest)
        more = f"… and {len(rest)} more: {names}"
        lines.append(first_lines(more, max(room - used - 1, 40), max_lines=1))
    return "\n".join(lines)


def _entry(failure: TestFailure, limit: int) -> str:
    where = f" ({failure.file}:{failure.line})" if failure.file and failure.line else ""
    head = f"- {failure.name}{where}"
    if not failure.message:
        return head
    message = first_lines(failure.message, max(limit - len(head) - 8, 40))
    return head + "\n" + "\n".join(f"    {line}" for line in message.split("\n"))


def _tails(out: str, err: str, room: int, *, labelled: bool) -> str:
    """The end of each stream that printed something, each in its share of ``room`` (a
    short one leaves the rest of its share to the other)."""
    streams = [(name, text.strip("\n")) for name, text in (("stdout", out), ("stderr", err))]
    streams = [(name, text) for name, text in streams if text.strip()]
    labelled = labelled or len(streams) > 1
    overhead = sum(len(f"[{name}]\n\n\n") for name, _ in streams) if labelled else 0
    room -= overhead
    if room <= 0 or not streams:
        return ""
    shares = _shares([len(text) for _, text in streams], room)
    parts = [
        (f"[{name}]\n" if labelled else "") + last_lines(text, share)
        for (name, text), share in zip(streams, shares, strict=True)
    ]
    return "\n\n".join(parts)


def _shares(sizes: list[int], room: int) -> list[int]:
    """Split ``room`` evenly, giving what a small one does not need to the others."""
    shares = [0] * len(sizes)
    left, waiting = room, sorted(range(len(sizes)), key=lambda i: sizes[i])
    while waiting:
        even = left // len(waiting)
        index = waiting.pop(0)
        shares[index] = min(sizes[index], even)
        left -= shares[index]
    return shares


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
