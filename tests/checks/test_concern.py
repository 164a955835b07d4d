"""What a task and a change concern, and a failed check judged by it against the base
commit: a failing test the task names, the change touched, or the change made pass in part
is the agent's, whatever the base did; only failures neither concerns, the same as on the
base, are set aside. Test names as pytest, unittest, cargo, go test and jest/vitest give them."""

from __future__ import annotations

import pytest

from golem.checks import CheckResult, Concern, TestFailure, TestProgress, judge
from golem.checks.judge import unexplained


def failure(name: str, file: str | None = None, message: str = "assert 1 == 2") -> TestFailure:
    return TestFailure(name=name, file=file, message=message)


@pytest.mark.parametrize(
    ("task", "test"),
    [
        ("tests/test_slug.py::test_tabs fails since 2.1", failure("tests/test_slug.py::test_tabs")),
        ("The test `test_tabs` is red", failure("tests/test_slug.py::test_tabs")),
        ("Fix the flaky TestClamp", failure("example.com/clamp.TestClamp", "clamp_test.go")),
        ("midpoint::tests::large panics", failure("midpoint::tests::large")),
        (
            'The test "pads to the widest label" fails',
            failure("src/align.test.ts > align > pads to the widest label"),
        ),
        ("slugify() leaves empty words", failure("tests/test_text.py::test_slugify_tabs")),
        ("count_words('') should be 0", failure("test_wc.WordCount.test_count_words_empty")),
        ("See tests/test_slug.py for the cases", failure("tests/test_slug.py::test_newline")),
    ],
)
def test_a_test_the_task_names_concerns_it(task: str, test: TestFailure) -> None:
    assert Concern.of(task).test(test)


@pytest.mark.parametrize(
    ("changed", "test"),
    [
        ("textkit/slugify.py", failure("tests/test_slugify.py::test_tab")),
        ("src/lib.rs", failure("tests::midpoint_large", "src/lib.rs")),
        ("src/lib.rs", failure("tests::midpoint_large")),
        ("src/slug.rs", failure("slug::tests::keeps_dashes")),
        ("clamp.go", failure("example.com/m/clamp.TestClamp", "clamp_test.go")),
        ("src/align.ts", failure("src/align.test.ts > align > pads")),
        ("tests/test_other.py", failure("tests/test_other.py::test_y")),
        ("wordcount.py", failure("test_wordcount.WordCountTest.test_empty")),
        ("pkg/__init__.py", failure("tests/test_pkg.py::test_x")),
    ],
)
def test_a_test_of_what_the_change_touched_concerns_it(changed: str, test: TestFailure) -> None:
    assert Concern.of("Make it better", [changed]).test(test)


@pytest.mark.parametrize(
    "test",
    [
        failure("tests/test_report.py::test_report_ends_with_a_full_stop"),
        failure("report::tests::full_stop"),
        failure("example.com/m/report.TestReport", "report_test.go"),
        failure("src/report.test.ts > report > ends with a full stop"),
        failure("tests/test_errors.py::test_error_is_raised"),  # "fix", "error": plain words
    ],
)
def test_a_test_neither_the_task_nor_the_change_concerns_is_not_theirs(test: TestFailure) -> None:
    concern = Concern.of("Fix the error: slugify() leaves empty words", ["textkit/slugify.py"])
    assert not concern.test(test)


def result(*failures: TestFailure, output: str = "", passed: bool = False) -> CheckResult:
    return CheckResult(
        name="test", command="pytest", passed=passed, exit_code=0 if passed else 1,
        duration=1.0, output_tail=output, failures=list(failures),
    )  # fmt: skip


TARGETS = [failure(f"tests/test_slugify.py::test_{case}") for case in ("a", "b", "c", "d")]
OLD = failure("tests/test_report.py::test_full_stop", message="assert '3 items' == '3 items.'")
SLUGIFY = Concern.of("slugify() leaves empty words", ["textkit/slugify.py"])
BASE = result(*TARGETS, OLD)


def test_the_tasks_tests_failing_as_on_the_base_are_held_and_the_rest_set_aside() -> None:
    judged = judge(result(*TARGETS, OLD), BASE, SLUGIFY)

    assert not judged.preexisting
    assert judged.set_aside == [OLD.name]
    assert judged.progress == TestProgress(passing=0, of=4)


def test_a_partial_fix_is_held_with_its_progress() -> None:
    judged = judge(result(TARGETS[2], TARGETS[3], OLD), BASE, Concern.of("Tidy up"))

    assert not judged.preexisting  # the change made two of them pass: the others are its
    assert judged.set_aside == [OLD.name]
    assert judged.progress == TestProgress(passing=2, of=4)


def test_a_right_fix_leaves_only_what_it_did_not_touch() -> None:
    judged = judge(result(OLD), BASE, SLUGIFY)

    assert judged.preexisting
    assert judged.set_aside == [OLD.name]
    assert judged.progress == TestProgress(passing=4, of=4)


def test_progress_in_one_file_holds_its_other_failures_not_another_files() -> None:
    other = failure("tests/test_other.py::test_z")
    judged = judge(result(TARGETS[1], other), result(TARGETS[0], TARGETS[1], other), Concern())

    assert judged.set_aside == [other.name]
    assert not judged.preexisting


def test_a_test_failing_differently_than_on_the_base_is_held() -> None:
    changed = OLD.model_copy(update={"message": "ZeroDivisionError"})
    judged = judge(result(changed), result(OLD), Concern())

    assert (judged.preexisting, judged.set_aside) == (False, [])


def test_output_without_tests_is_held_when_it_names_a_changed_file() -> None:
    before = result(output="legacy.py:3:1: E302 expected 2 blank lines")
    now = result(output="legacy.py:3:1: E302 expected 2 blank lines")

    assert not judge(now, before, Concern.of("Tidy", ["legacy.py"])).preexisting
    assert judge(now, before, Concern.of("Tidy", ["other.py"])).preexisting


def test_nothing_of_a_check_that_passed_on_the_base_is_set_aside() -> None:
    judged = judge(result(OLD), result(passed=True), Concern())

    assert (judged.preexisting, judged.set_aside) == (False, [])


def test_only_a_failure_the_change_does_not_explain_is_worth_running_again() -> None:
    clock = failure("tests/test_clock.py::test_timing")
    passed = result(passed=True)

    assert unexplained(result(clock), passed, SLUGIFY)  # new, and nothing of the change's
    assert not unexplained(result(TARGETS[0]), passed, SLUGIFY)  # the change's test
    assert not unexplained(judge(result(*TARGETS, OLD), BASE, SLUGIFY), BASE, SLUGIFY)
    assert not unexplained(result(clock), None, SLUGIFY)  # nothing known of the base
