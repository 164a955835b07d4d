"""How a verification judges what it sees: whether a failure is the one the base commit
had (by failing test and message where they were parsed, by output line otherwise), and the
box's working tree as a fingerprint that a check's edits change and ``restore`` undoes."""

from __future__ import annotations

import pytest

from golem.checks import CheckResult, TestFailure, changed_between, fingerprint, restore
from golem.checks.judge import already_failing, unverified_reason
from golem.sandbox import Box, ExecRequest
from tests.conftest import QUICK_START_BACKENDS


@pytest.fixture(params=QUICK_START_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The fingerprint runs git and python3 in the box: on every backend."""
    return str(request.param)


def failed(output: str = "", *failures: tuple[str, str], exit_code: int = 1) -> CheckResult:
    return CheckResult(
        name="test",
        command="pytest",
        passed=False,
        exit_code=exit_code,
        duration=1.0,
        output_tail=output,
        failures=[TestFailure(name=name, message=message) for name, message in failures],
    )


LINT_BEFORE = "src/a.py:12:5: F401 `os` imported but unused\nFound 1 error in 0.21s"


def test_the_same_lint_errors_on_shifted_lines_are_the_base_commits() -> None:
    now = failed("src/a.py:14:5: F401 `os` imported but unused\nFound 1 error in 0.35s")
    assert already_failing(now, [failed(LINT_BEFORE)])


def test_a_new_lint_error_is_the_changes() -> None:
    now = failed(LINT_BEFORE + "\nsrc/b.py:3:1: F841 local variable `x` is never used")
    assert not already_failing(now, [failed(LINT_BEFORE)])


def test_a_check_that_passed_on_the_base_or_never_ran_there_is_the_changes() -> None:
    passed = failed(LINT_BEFORE).model_copy(update={"passed": True, "exit_code": 0})
    assert not already_failing(failed(LINT_BEFORE), [passed])
    assert not already_failing(failed(LINT_BEFORE), None)
    other = failed(LINT_BEFORE).model_copy(update={"command": "ruff check"})
    assert not already_failing(failed(LINT_BEFORE), [other])
    assert not already_failing(failed(LINT_BEFORE, exit_code=2), [failed(LINT_BEFORE)])


def test_parsed_failures_are_compared_by_test_and_message() -> None:
    before = [
        failed("", ("t.py::test_net", "ConnectionError at 0x7f3a"), ("t.py::test_a", "-1 != 5"))
    ]
    assert already_failing(failed("", ("t.py::test_net", "ConnectionError at 0x9b12")), before)
    assert not already_failing(failed("", ("t.py::test_new", "boom")), before)
    # the test the task is about, failing differently: the change's to fix
    assert not already_failing(failed("", ("t.py::test_a", "6 != 5")), before)


async def test_a_fingerprint_sees_edits_and_restore_undoes_them(box: Box) -> None:
    async def sh(command: str) -> str:
        done = await box.execute(ExecRequest(cmd=command, workdir="/workspace"))
        assert done.exit_code == 0, done.stderr_text
        return done.stdout_text

    await sh(
        "git init -q . && printf 'a\\n' > kept.txt && printf 'b\\n' > edited.txt && "
        "mkdir -p .venv && echo x > .venv/made && git add kept.txt edited.txt && "
        "git -c user.name=t -c user.email=t@t commit -qm base && echo new > untracked.txt"
    )
    before = await fingerprint(box, exclude=[".venv"])
    assert await fingerprint(box, exclude=[".venv"]) == before  # reading changes nothing
    await sh("echo y > .venv/made")  # an excluded path: not part of the tree
    assert await fingerprint(box, exclude=[".venv"]) == before
    await sh("printf 'B\\n' > edited.txt && rm untracked.txt && echo 1 > stamp.txt")
    after = await fingerprint(box, exclude=[".venv"])
    assert after != before
    changed = await changed_between(box, before, after)
    assert sorted(changed) == ["edited.txt", "stamp.txt", "untracked.txt"]
    assert sorted(await restore(box, before, exclude=[".venv"])) == sorted(changed)
    listed = await sh("cat edited.txt untracked.txt; ls")
    assert listed == "b\nnew\nedited.txt\nkept.txt\nuntracked.txt\n"
    assert await fingerprint(box, exclude=[".venv"]) == before
    assert await sh("git status --porcelain") == "?? .venv/\n?? untracked.txt\n"  # index kept


def test_a_value_in_a_message_that_changed_is_the_changes() -> None:
    before = failed("AssertionError: 3 != 10\nRan 4 tests in 0.002s\nFAILED")
    assert already_failing(
        failed("AssertionError: 3 != 10\nRan 5 tests in 0.010s\nFAILED"), [before]
    )
    assert not already_failing(failed("AssertionError: 12 != 10\nRan 4 tests in 0.002s"), [before])


def test_an_output_line_is_compared_whole_not_as_a_part_of_one() -> None:
    before = failed("src/pkg/a.py:1:1: E501 line too long (120 > 79)")
    assert not already_failing(failed("a.py:9:1: E501 line too long (120 > 79)"), [before])
    assert not already_failing(failed("E501"), [before])
    assert not already_failing(failed("src/pkg/a.py:3:1: E501 line too long (99 > 79)"), [before])
    assert already_failing(failed("src/pkg/a.py:7:2: E501 line too long (120 > 79)"), [before])
    trace = failed('  File "t.py", line 40, in test_x\nValueError: bad 0x7f3a2b10 at t.py:40')
    now = failed('  File "t.py", line 44, in test_x\nValueError: bad 0x7f00ee20 at t.py:44')
    assert already_failing(now, [trace])


def test_passing_checks_that_need_containers_in_a_box_without_an_engine_verify_nothing() -> None:
    passed = failed().model_copy(update={"passed": True, "exit_code": 0})
    needs = ["service postgres (.github/workflows/ci.yml, job test)"]

    without = unverified_reason(
        [passed], checks=["test"], source="ci", containers=needs, no_engine="no microVM tier"
    )
    with_engine = unverified_reason([passed], checks=["test"], source="ci", containers=needs)

    assert without is not None
    assert without.startswith("needs containers: no microVM tier; the checks need service postgres")
    assert with_engine is None
