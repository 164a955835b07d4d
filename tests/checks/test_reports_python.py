"""A failing Python check's report: real pytest and unittest runs, coloured, parsed into
their failing tests and messages, then the end of each stream in its share of the budget."""

from __future__ import annotations

import sys
from pathlib import Path

from golem.checks.reports import failure_report
from tests.checks.python_projects import CALC, PYTEST
from tests.checks.reporting import ESC, assert_readable, run, write


def test_pytests_failing_tests_and_messages_come_out_of_its_coloured_output(
    tmp_path: Path,
) -> None:
    ran = run(PYTEST, write(tmp_path, CALC))
    assert ESC in ran.stdout
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    assert [f.name for f in report.failures] == [
        "test_calc.py::test_add",
        "test_calc.py::TestThings::test_raises",
        "test_calc.py::test_param[2]",
        "test_calc.py::test_needs",
    ]
    add, raises, param, needs = report.failures
    assert (add.file, add.line) == ("test_calc.py", 7)
    assert add.message.startswith("assert -1 == 5")
    assert raises.message == "ValueError: bad value"
    assert "x was 2" in param.message
    assert "fixture 'missing_fixture' not found" in needs.message
    assert report.text.startswith("Failing tests (4):\n- test_calc.py::test_add (test_calc.py:7)")
    assert "3 failed, 2 passed, 1 error" in report.text  # the end of stdout follows
    assert_readable(report)


def test_a_megabyte_of_noise_on_stderr_does_not_push_the_pytest_failures_out(
    tmp_path: Path,
) -> None:
    noisy = """\
import sys

def test_noisy():
    for i in range(25_000):
        print(f"DeprecationWarning: something old, line {i}", file=sys.stderr)
    assert "expected" == "actual"
"""
    ran = run(f"{PYTEST} -s", write(tmp_path, {"test_noisy.py": noisy}))
    assert len(ran.stderr) > 1_000_000
    report = failure_report(ran.command, ran.stdout, ran.stderr, budget=4000)
    [failure] = report.failures
    assert failure.name == "test_noisy.py::test_noisy"
    assert "AssertionError: assert 'expected' == 'actual'" in failure.message
    stdout, stderr = report.text.split("[stdout]\n")[1].split("\n\n[stderr]\n")
    assert "1 failed in" in stdout  # pytest's last line, though stderr is a thousand times longer
    assert stderr.endswith("line 24999")
    assert_readable(report, budget=4000)


def test_unittest_failures_come_out_with_their_assertions_and_subtests(tmp_path: Path) -> None:
    tests = """\
import unittest

class SplitTests(unittest.TestCase):
    def test_split(self):
        self.assertEqual("a b".split(), ["a", "c"])

    def test_ok(self):
        pass

    def test_error(self):
        {}["missing"]

    def test_sub(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)
"""
    ran = run(f"{sys.executable} -m unittest", write(tmp_path, {"test_split.py": tests}))
    assert ran.exit_code == 1
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    by_name = {f.name: f for f in report.failures}
    assert sorted(by_name) == [
        "test_split.SplitTests.test_error",
        "test_split.SplitTests.test_split",
        "test_split.SplitTests.test_sub (i=2)",
    ]
    assert by_name["test_split.SplitTests.test_error"].message == "KeyError: 'missing'"
    split = by_name["test_split.SplitTests.test_split"]
    assert split.message.startswith("AssertionError: Lists differ: ['a', 'b'] != ['a', 'c']")
    assert (Path(split.file or "").name, split.line) == ("test_split.py", 5)
    assert "Traceback" not in split.message
    assert by_name["test_split.SplitTests.test_sub (i=2)"].message == (
        "AssertionError: 2 not less than 2"
    )
    assert_readable(report)


def test_make_test_running_pytest_is_read_as_pytest(tmp_path: Path) -> None:
    makefile = f"test:\n\t{PYTEST} -q\n"
    ran = run("make test", write(tmp_path, {**CALC, "Makefile": makefile}))
    assert ran.exit_code != 0
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    assert "test_calc.py::test_add" in [f.name for f in report.failures]
    assert len(report.failures) == 4


def test_a_progress_bar_redrawn_with_carriage_returns_shows_as_last_drawn(
    tmp_path: Path,
) -> None:
    bar = (
        f'{sys.executable} -c "import sys\n'
        "for i in range(101): sys.stderr.write(f'\\rinstalling \\x1b[32m{i}%\\x1b[0m')\n"
        "sys.stderr.write('\\ndone\\n')\" && false"
    )
    ran = run(bar, tmp_path)
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    assert report.text == "installing 100%\ndone"
    assert report.failures == []


def test_many_failures_are_listed_up_to_the_budget_then_counted(tmp_path: Path) -> None:
    many = """\
import pytest

@pytest.mark.parametrize("n", range(60))
def test_many(n):
    assert n < 0, "n is not negative: " + "✓" * 50
"""
    ran = run(PYTEST, write(tmp_path, {"test_many.py": many}))
    report = failure_report(ran.command, ran.stdout, ran.stderr, budget=3000)
    assert len(report.failures) == 60  # all named, for the baseline to compare
    assert all(f.message for f in report.failures[:20])
    assert not any(f.message for f in report.failures[20:])
    listed = [line for line in report.text.split("\n") if line.startswith("- test_many.py")]
    assert 2 <= len(listed) < 60
    assert f"… and {60 - len(listed)} more: test_many.py::test_many[" in report.text
    assert "60 failed in" in report.text
    assert_readable(report, budget=3000)
    report.text.encode("utf-8")  # whole characters only


def test_a_tail_that_begins_inside_the_failures_section_still_gives_the_messages(
    tmp_path: Path,
) -> None:
    ran = run(PYTEST, write(tmp_path, CALC))
    banner_end = ran.stdout.index("\n", ran.stdout.index("FAILURES"))
    cut = ran.stdout[banner_end + 20 :]  # the banner and the first header are gone
    report = failure_report(ran.command, cut, "")
    param = next(f for f in report.failures if f.name.endswith("test_param[2]"))
    assert param.message == "AssertionError: x was 2\nassert 2 == 1"  # the summary has line 1


DOCUMENTED = {
    "shlexish.py": '''\
import doctest
import unittest


def split(s):
    """
    >>> split("a b")
    ['a', 'b']
    """
    return [s]


class SplitTests(unittest.TestCase):
    def test_described(self):
        """Split on spaces, keeping quotes."""
        self.assertEqual(split("a b"), ["a", "b"])


def load_tests(loader, tests, ignore):
    tests.addTests(doctest.DocTestSuite())
    return tests
''',
}


def test_unittest_failures_of_described_tests_and_doctests_come_out(tmp_path: Path) -> None:
    ran = run(f"{sys.executable} -m unittest shlexish", write(tmp_path, DOCUMENTED))
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    by_name = {f.name: f for f in report.failures}
    assert sorted(by_name) == ["shlexish.SplitTests.test_described", "shlexish.split"]
    described = by_name["shlexish.SplitTests.test_described"]
    assert described.message.startswith("AssertionError: Lists differ: ['a b'] != ['a', 'b']")
    assert "Got:\n    ['a b']" in by_name["shlexish.split"].message


def test_doctests_own_output_names_the_failing_docstrings(tmp_path: Path) -> None:
    ran = run(f"{sys.executable} -m doctest shlexish.py", write(tmp_path, DOCUMENTED))
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    [failure] = report.failures
    assert (failure.name, failure.line) == ("shlexish.split", 7)
    assert failure.message == (
        "Failed example:\n    split(\"a b\")\nExpected:\n    ['a', 'b']\nGot:\n    ['a b']"
    )


def test_pytest_doctest_modules_failures_come_out_with_what_they_got(tmp_path: Path) -> None:
    ran = run(f"{PYTEST} --doctest-modules shlexish.py", write(tmp_path, DOCUMENTED))
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    by_name = {f.name: f for f in report.failures}
    assert sorted(by_name) == [
        "shlexish.py::SplitTests::test_described",
        "shlexish.py::shlexish.split",
    ]
    doctest = by_name["shlexish.py::shlexish.split"]
    assert "Got:\n    ['a b']" in doctest.message
    assert (Path(doctest.file or "").name, doctest.line) == ("shlexish.py", 7)
