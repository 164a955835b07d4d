"""What the hidden tests' runs say: a test fails-to-passes when it failed (or did not run)
with the tests alone and passes with the fix; a task is resolved only when every one of its
tests passes (a test that did not run did not pass) and every command that must pass whole
does; a runner that names no passing test vouches for its tests only by passing whole."""

from __future__ import annotations

from golem.eval import CommandOutcome, EvalTask, TestRun, derive, score
from golem.eval.judge import status_of

BASE = "0123456789abcdef0123456789abcdef01234567"


def run(*commands: CommandOutcome, ran: bool = True, why: str | None = None) -> TestRun:
    return TestRun(ran=ran, why=why, commands=list(commands))


def pytest_run(passed: list[str], failed: list[str]) -> CommandOutcome:
    return CommandOutcome(
        command="python3 -m pytest", passed=not failed, exit_code=int(bool(failed)),
        tests_passed=passed, tests_failed=failed, names_passes=True,
    )  # fmt: skip


def jest_run(failed: list[str]) -> CommandOutcome:
    return CommandOutcome(command="npm test", passed=not failed, exit_code=int(bool(failed)),
                          tests_failed=failed, names_passes=False)  # fmt: skip


def task(**fields: object) -> EvalTask:
    fixed = {"instance_id": "t-1", "repo": "o/r", "base_commit": BASE, "test_patch": "",
             "problem_statement": "x"}  # fmt: skip
    return EvalTask.model_validate({**fixed, **fields})


def test_a_test_fails_to_pass_when_it_failed_or_did_not_run_before_and_passes_after() -> None:
    before = run(pytest_run(["t.py::old"], ["t.py::new", "t.py::flaky_env"]))
    after = run(pytest_run(["t.py::old", "t.py::new", "t.py::added_later"], ["t.py::flaky_env"]))
    derived = derive(before, after)
    assert derived.fail_to_pass == ["t.py::added_later", "t.py::new"]
    assert derived.pass_to_pass == ["t.py::old"]
    assert derived.must_pass == []
    assert derived.why_not is None


def test_a_runner_that_names_no_passing_test_vouches_for_its_tests_only_by_passing_whole() -> None:
    derived = derive(run(jest_run(["suite > adds"])), run(jest_run([])))
    assert derived.fail_to_pass == ["suite > adds"]
    assert derived.must_pass == ["npm test"]
    named = task(FAIL_TO_PASS=["suite > adds"], golem_must_pass=["npm test"])
    assert score(named, run(jest_run([]))).resolved
    broken_elsewhere = run(jest_run(["other > thing"]))
    assert status_of(broken_elsewhere, "suite > adds") == "missing"
    assert not score(named, broken_elsewhere).resolved


def test_a_task_is_resolved_only_when_every_hidden_test_passes() -> None:
    hidden = task(FAIL_TO_PASS=["t.py::new"], PASS_TO_PASS=["t.py::old"])
    assert score(hidden, run(pytest_run(["t.py::new", "t.py::old"], []))).resolved
    regressed = score(hidden, run(pytest_run(["t.py::new"], ["t.py::old"])))
    assert not regressed.resolved
    assert regressed.failing() == ["t.py::old"]
    never_ran = score(hidden, run(pytest_run(["t.py::old"], ["t.py (failed to collect)"])))
    assert never_ran.fail_to_pass == {"t.py::new": "missing"}
    assert not never_ran.resolved
    environment = score(hidden, run(ran=False, why="install failed"))
    assert not environment.resolved


def test_swe_benchs_unittest_names_are_golems_names() -> None:
    passed = ["admin.tests.AdminTests.test_add"]
    django = CommandOutcome(command="./runtests.py", passed=True, exit_code=0,
                            tests_passed=passed, names_passes=True)  # fmt: skip
    assert status_of(run(django), "test_add (admin.tests.AdminTests)") == "passed"
    assert status_of(run(django), "test_add (admin.tests.AdminTests.test_add)") == "passed"


def test_a_change_makes_no_task_saying_why() -> None:
    broken = run(ran=False, why="the environment could not be made (install failed): x")
    assert derive(broken, run(pytest_run(["a"], []))).why_not == (
        "its tests could not run before the fix: the environment could not be made (install "
        "failed): x"
    )
    assert derive(run(pytest_run(["a"], ["b"])), run(pytest_run(["a"], ["b"]))).why_not == (
        "with the fix, tests still fail: b"
    )
    assert derive(run(pytest_run(["a", "b"], [])), run(pytest_run(["a", "b"], []))).why_not == (
        "no test fails before the fix: its tests pass without it too"
    )
