"""JUnit XML a check wrote names its failing tests when its output does not; a document
with a DOCTYPE (entities, the billion laughs) or too large is not read; and the paths a
check wrote are recognised as reports by their conventional names."""

from __future__ import annotations

import sys
from pathlib import Path

from golem.checks.reports import MAX_XML, failure_report, junit_paths
from tests.checks.reporting import run, write

TESTS = """\
def test_add():
    assert 1 + 1 == 3

def test_ok():
    pass

def test_error():
    raise KeyError("gone")
"""
LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<testsuite><testcase classname="t" name="laughs"><failure message="&lol2;"/></testcase></testsuite>
"""


def junit_of_a_real_pytest_run(tmp_path: Path) -> str:
    project = write(tmp_path, {"test_sums.py": TESTS})
    command = (
        f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -p no:cacheprovider "
        "--junitxml=reports/junit.xml -q"
    )
    assert run(command, project).exit_code == 1
    return (project / "reports" / "junit.xml").read_text()


def test_junit_xml_names_the_failing_tests_when_the_output_is_not_a_known_format(
    tmp_path: Path,
) -> None:
    xml = junit_of_a_real_pytest_run(tmp_path)
    report = failure_report("./ci/run-tests", "3 tests, 2 failed\n", "", junit=[xml])
    assert [(f.name, f.message) for f in report.failures] == [
        ("test_sums.test_add", "assert (1 + 1) == 3"),
        ("test_sums.test_error", "KeyError: 'gone'"),
    ]
    assert report.text.startswith("Failing tests (2):\n- test_sums.test_add\n")


def test_the_output_wins_over_junit_xml_that_names_the_same_tests(tmp_path: Path) -> None:
    xml = junit_of_a_real_pytest_run(tmp_path)
    ran = run(f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q", tmp_path)
    report = failure_report(ran.command, ran.stdout, ran.stderr, junit=[xml])
    names = [f.name for f in report.failures]
    assert names == ["test_sums.py::test_add", "test_sums.py::test_error"]


def test_junit_xml_with_a_doctype_or_too_large_is_not_read() -> None:
    too_large = '<testsuite><testcase name="big"><failure message="x"/></testcase>'
    too_large += " " * MAX_XML + "</testsuite>"
    report = failure_report("./ci/run-tests", "failed\n", "", junit=[LAUGHS, too_large, "<not"])
    assert report.failures == []
    assert report.text == "failed"


def test_conventional_junit_report_paths_are_recognised() -> None:
    paths = [
        "junit.xml", "reports/junit-unit.xml", "build/test-results/test/TEST-calc.CalcTest.xml",
        "target/surefire-reports/TEST-x.xml", "test-results.xml", "coverage/cobertura.xml",
        "pom.xml", "src/data.xml", "out/vitest.junit.xml", "test-results/e2e/results.xml",
    ]  # fmt: skip
    assert junit_paths(paths) == [
        "junit.xml", "reports/junit-unit.xml", "build/test-results/test/TEST-calc.CalcTest.xml",
        "target/surefire-reports/TEST-x.xml", "test-results.xml", "out/vitest.junit.xml",
        "test-results/e2e/results.xml",
    ]  # fmt: skip


def test_a_report_the_command_names_is_read_whatever_its_name() -> None:
    written = ["/workspace/report.xml", "/workspace/other.xml", "/workspace/out/r.xml"]
    assert junit_paths(written, "pytest tests --junitxml=report.xml") == [written[0]]
    assert junit_paths(written, "pytest --junit-xml ./out/r.xml -q") == [written[2]]
    assert junit_paths(written, "pytest tests") == []
