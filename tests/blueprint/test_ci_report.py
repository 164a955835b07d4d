"""What a CI fix prompt and a CI round's note say of failing jobs: each with its failed
steps and log tail, a check that passed in golem's box named as such, and a matrix of
failures bounded."""

from __future__ import annotations

from typing import Any

from golem.blueprint.steps.ci_report import describe_jobs, fix_failures
from golem.checks import CheckResult
from golem.forge.ci import CIJob


def job(name: str, **fields: Any) -> CIJob:
    return CIJob.model_validate(
        {"id": name, "name": name, "kind": "job", "state": "failed", **fields}
    )


def check(name: str, command: str, *, passed: bool) -> CheckResult:
    return CheckResult(
        name=name, command=command, passed=passed, exit_code=0 if passed else 1, duration=1.0
    )


def test_a_failing_job_comes_with_its_steps_log_and_the_local_check_that_passed() -> None:
    failing = job(
        "unit tests", group="test", url="https://ci.example/jobs/1",
        failed_steps=["Run pytest"], log_tail="$ pytest -q\nE   assert 2 == 3\n1 failed",
    )  # fmt: skip
    text = fix_failures([failing], [check("test", "pytest -q", passed=True)])
    assert "### `unit tests` (`test`)" in text
    assert "`https://ci.example/jobs/1`" in text
    assert "Failed steps: `Run pytest`" in text
    assert "E   assert 2 == 3" in text
    assert "passed in golem's box (`pytest -q`) but fails in CI" in text


def test_a_check_that_failed_locally_or_runs_elsewhere_is_not_said_to_pass() -> None:
    failing = job("deploy", log_tail="kubectl apply: forbidden")
    checks = [check("test", "pytest -q", passed=True), check("lint", "ruff check", passed=False)]
    assert "golem's box" not in fix_failures([failing], checks)


def test_a_cancelled_job_says_it_did_not_finish() -> None:
    assert "cancelled (it did not finish" in fix_failures([job("e2e", state="cancelled")], [])


def test_a_matrix_of_failures_is_detailed_for_the_first_few_and_named_after() -> None:
    jobs = [job(f"test ({n})") for n in range(8)]
    prompt = fix_failures(jobs, [])
    assert prompt.count("### `test (") == 5
    assert "... and 3 more failing: `test (5)`, `test (6)`, `test (7)`" in prompt
    note = describe_jobs(jobs)
    assert len(note.splitlines()) == 6
    assert note.endswith("... and 3 more failing: `test (5)`, `test (6)`, `test (7)`")
