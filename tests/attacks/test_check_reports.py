"""A check's output is the box's to write, and the host parses it into failing tests (and
passing ones, for `golem eval`): no output (long lines, runs of blank lines, thousands of
headings, hostile escape sequences) makes that parsing take more than linear time, and the
report stays within its budget.
The test would hang on a parser with nested or line-crossing repetitions (a guard
timeout ends it)."""

from __future__ import annotations

import random

import pytest

from golem.checks import CheckResult, Concern, TestFailure, find_outcomes, judge
from golem.checks.reports import failure_report
from golem.checks.reports.report import FORMATS

SIZE = 128 * 1024
HOSTILE = {
    "blank lines": "\n" * SIZE,
    "one long line of spaces": " " * SIZE,
    "a rule that never ends": "= " + "=" * SIZE + "x",
    "a stack line of parentheses": "    at " + "(" * SIZE,
    "a stack line of locations": "    at " + "a:1" * (SIZE // 3),
    "cargo sections": "---- a stdout ----\n" * (SIZE // 19),
    "an unclosed old-style panic": "---- a stdout ----\npanicked at '" + "'" * SIZE,
    "a rustc error of bars": "error[E0001]: x\n" + "|" * SIZE + "\nerror: could not compile `x`\n",
    "TAP blocks never closed": "not ok 1 - x\n  ---\n" * (SIZE // 19),
    "a TAP location of colons": "not ok 1 - a\n  ---\n  location: '" + ":1" * (SIZE // 2),
    "jest headings": "  \u25cf a\n" * (SIZE // 6),
    "vitest headings": " FAIL  a > b\n" * (SIZE // 13),
    "go subtests": "".join(f"--- FAIL: T{'/a' * (i % 50)} (0.00s)\n" for i in range(SIZE // 60)),
    "a go package that never built": "FAIL\tp [build failed]\n# p\n" + "x\n" * (SIZE // 2),
    "pytest summary colons": "FAILED " + "a::" * (SIZE // 3),
    "pytest underscores": "___ " + "_ " * (SIZE // 2),
    "unittest headings": ("=" * 70 + "\nFAIL: t (a.b)\n" + "-" * 70 + "\n") * (SIZE // 160),
    "an endless traceback": "Traceback (most recent call last):\n" + '  File "' * (SIZE // 8),
    "escape starts": "\x1b[" * (SIZE // 2),
    "carriage returns": "a\r" * (SIZE // 2),
    "a jest summary of spaces": "Tests: " + " " * SIZE,
    "doctest rules": ("*" * 70 + '\nFile "a", line 1, in x\nFailed example:\n') * (SIZE // 110),
    "mocha blocks": "  1 passing (1ms)\n  2 failing\n" + "  1) a\n" * (SIZE // 7),
    "a mocha title that never ends": "  1 passing (1ms)\n  1 failing\n  1) a\n" + " b\n" * SIZE,
    "pytest passes of colons": "PASSED " + "a::" * (SIZE // 3),
    "a verbose pytest line that never passes": "a::" * (SIZE // 3) + " PASSE",
    "unittest lines that never end": "test_a (a.b)\n" * (SIZE // 13),
    "a unittest line of dots": "test_a (a.b) " + "." * SIZE,
    "TAP passes": "TAP version 13\n" + "ok 1 - x\n" * (SIZE // 9),
    "go passes": "ok  p 0.1s\n"
    + "".join(f"--- PASS: T{'/a' * (i % 50)} (0.00s)\n" for i in range(SIZE // 60)),
    "cargo passes": "test result: ok. 1 passed\n" + "test a ... ok\n" * (SIZE // 14),
}
FRAGMENTS = [
    "\n",
    " ",
    "\t",
    "=",
    "_",
    "E ",
    "FAILED ",
    "::",
    "---- ",
    " stdout ----",
    "--- FAIL: ",
    "(0.00s)",
    "not ok 1 ",
    "  ---",
    "  ...",
    "error: ",
    "|",
    "  \u25cf ",
    " FAIL  ",
    " > ",
    "at ",
    "(",
    ")",
    ":1",
    ":2:3",
    "\r",
    "\x1b[31m",
    "Traceback (most recent call last):",
    '  File "',
    '", line 3',
    "panicked at ",
    "'",
    "# Subtest: ",
    "\u276f ",
    "=" * 60,
    "-" * 60,
    "Ran 3 tests in 0.1s",
    "test result: ok. 1 passed",
    "Tests: 1 total",
    "PASSED ",
    " PASSED",
    " ... ok",
    "ok 1 ",
    "--- PASS: ",
    "test_a (a.b)",
]


def shuffled(seed: int) -> str:
    chosen = random.Random(seed)  # noqa: S311 - reproducible data, not secrets
    return "".join(chosen.choice(FRAGMENTS) for _ in range(SIZE // 6))


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "output",
    [*HOSTILE.values(), *map(shuffled, range(4))],
    ids=[*HOSTILE, *(f"shuffled {n}" for n in range(4))],
)
def test_hostile_check_output_is_parsed_in_linear_time_and_reported_in_budget(
    output: str,
) -> None:
    for format_ in FORMATS:
        if format_.recognises(output):
            format_.parse(output)
            if format_.passes is not None:
                format_.passes(output)
    find_outcomes("make test", output)
    report = failure_report("make test", output, output, budget=4000)
    assert len(report.text) <= 4000
    assert "\x1b" not in report.text
    assert len(report.failures) <= 1000
    assert sum(len(f.message) for f in report.failures) <= 20 * 800


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "text",
    [HOSTILE["one long line of spaces"], HOSTILE["a stack line of locations"],
     HOSTILE["go subtests"], "a/" * (SIZE // 2), "a." * (SIZE // 2), "x::" * (SIZE // 3),
     "a" + " " * SIZE + "\u203a", "a(" * (SIZE // 2), *map(shuffled, range(2))],
)  # fmt: skip
def test_hostile_output_test_names_and_tasks_are_judged_in_linear_time(text: str) -> None:
    """What a task says (a forge's issue) and what a box prints (its output, its tests'
    names) are matched against each other to judge a failure: never in more than linear
    time."""
    concern = Concern.of(text, [text[:4096], "src/a.py"])
    failure = TestFailure(name=text, file=text[:4096], message=text)
    base = CheckResult(
        name="test", command=text, passed=False, exit_code=1, duration=1.0,
        output_tail=text, failures=[failure],
    )  # fmt: skip
    judged = judge(base.model_copy(update={"failures": [failure]}), base, concern)
    assert judged.failures == [failure]
    assert not judge(base.model_copy(update={"failures": []}), base, concern).set_aside
