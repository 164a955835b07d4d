"""A failing JavaScript check's report: jest's and vitest's output (verbatim runs kept as
fixtures: neither installs offline) and real ``node --test`` runs, TAP and spec reporter."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.checks.reports import failure_report
from tests.checks.node_projects import NODE_TESTS, node
from tests.checks.reporting import assert_readable, run, write

FIXTURES = Path(__file__).parent / "fixtures"


def test_jests_failing_tests_come_out_named_by_suite_with_their_expectations() -> None:
    stderr = (FIXTURES / "jest.stderr.txt").read_text()
    report = failure_report("npm test", "", stderr)
    assert [(f.name, f.file, f.line) for f in report.failures] == [
        ("calc \u203a subtracts", "src/calc.test.js", 10),
        ("format \u203a pads numbers", "src/calc.test.js", 17),
        ("src/broken.test.js (failed to run)", "src/broken.test.js", 1),
    ]
    subtracts, pads, broken = report.failures
    assert subtracts.message == (
        "expect(received).toBe(expected) // Object.is equality\n\nExpected: 1\nReceived: 3"
    )
    assert pads.message == "TypeError: pad is not a function"
    assert broken.message == "Cannot find module './missing' from 'src/broken.test.js'"
    assert "Tests:       2 failed, 3 passed, 5 total" in report.text
    assert_readable(report)


def test_vitests_failing_tests_come_out_with_their_paths_and_errors() -> None:
    stdout = (FIXTURES / "vitest.stdout.txt").read_text()
    stderr = (FIXTURES / "vitest.stderr.txt").read_text()
    report = failure_report("pnpm vitest run", stdout, stderr)
    assert [(f.name, f.line) for f in report.failures] == [
        ("src/broken.test.ts (failed to run)", None),
        ("src/calc.test.ts > calc > subtracts", 10),
        ("src/calc.test.ts > format > pads numbers", 17),
    ]
    broken, subtracts, pads = report.failures
    assert broken.message.startswith("Error: Failed to load url ./missing")
    assert subtracts.message.startswith("AssertionError: expected 3 to be 1")
    assert "+ 3" in subtracts.message
    assert "expect(sub(2, 1))" not in subtracts.message  # the code frame is not the message
    assert pads.message == "TypeError: pad is not a function"
    assert_readable(report)


def test_a_vitest_failure_is_recognised_by_its_output_whatever_the_command_says() -> None:
    stdout = (FIXTURES / "vitest.stdout.txt").read_text()
    stderr = (FIXTURES / "vitest.stderr.txt").read_text()
    report = failure_report("./scripts/ci.sh", stdout, stderr)
    assert len(report.failures) == 3


@node
@pytest.mark.parametrize("reporter", ["", " --test-reporter=spec"])
def test_node_tests_failures_come_out_of_tap_and_of_the_spec_reporter(
    tmp_path: Path, reporter: str
) -> None:
    project = write(tmp_path, {"calc.test.mjs": NODE_TESTS})
    ran = run(f"node --test{reporter}", project, FORCE_COLOR="1")
    assert ran.exit_code == 1
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    names = [f.name for f in report.failures]
    assert names in (["adds numbers", "suite > nested fails"], ["adds numbers", "nested fails"])
    adds, nested = report.failures
    assert "-1 !== 5" in adds.message
    assert (Path(adds.file or "").name, adds.line) == ("calc.test.mjs", 6)
    assert nested.message.endswith("nested boom")
    assert_readable(report)


def test_mochas_failures_come_out_named_by_their_titles_with_their_errors() -> None:
    stdout = (FIXTURES / "mocha.stdout.txt").read_text()
    report = failure_report("npm test", stdout, "")
    assert [(f.name, f.file, f.line) for f in report.failures] == [
        ("calc subtracts", "test/calc.test.js", 10),
        ("format pads numbers", "test/calc.test.js", 17),
        ('io "before each" hook for "reads a file"', "test/io.test.js", 6),
    ]
    subtracts, pads, hook = report.failures
    assert subtracts.message.startswith("AssertionError [ERR_ASSERTION]: Expected values")
    assert "3 !== 1" in subtracts.message
    assert pads.message == "TypeError: pad is not a function"
    assert hook.message.startswith("Error: ENOENT: no such file or directory")
    assert_readable(report)


BATS = """\
1..3
ok 1 addition works
not ok 2 subtraction works
# (in test file test/calc.bats, line 9)
#   `[ "$result" -eq 1 ]' failed
not ok 3 output matches
# (in test file test/calc.bats, line 14)
#   `[ "$output" = "3" ]' failed with status 1
"""


def test_bats_failures_come_out_of_the_comments_after_them() -> None:
    report = failure_report("bats test", BATS, "")
    assert [(f.name, f.message, f.file, f.line) for f in report.failures] == [
        ("subtraction works", """`[ "$result" -eq 1 ]' failed""", "test/calc.bats", 9),
        ("output matches", """`[ "$output" = "3" ]' failed with status 1""", "test/calc.bats", 14),
    ]
