"""A preparation that serves only some checks drops them when it fails, with why and what
makes them run, so long as a test check is left to verify the change; any other failed
install is fatal."""

from __future__ import annotations

from golem.checks import CheckResult, dropped_by, why_not_run

CHECKS = [("lint", "pre-commit run --all-files"), ("test", "python3 -m pytest -q")]


def failed(command: str, output: str = "", exit_code: int = 3) -> CheckResult:
    return CheckResult(
        name="install",
        command=command,
        passed=False,
        exit_code=exit_code,
        duration=1.0,
        output_tail=output,
    )


def test_a_failed_warm_up_drops_only_the_checks_it_serves() -> None:
    assert dropped_by(failed("pre-commit install-hooks"), CHECKS) == [CHECKS[0]]


def test_a_failed_install_of_the_repository_is_fatal() -> None:
    assert dropped_by(failed("pip install -e ."), CHECKS) is None


def test_a_failure_that_would_leave_no_test_to_verify_with_is_fatal() -> None:
    assert dropped_by(failed("pre-commit install-hooks"), CHECKS[:1]) is None
    only_tests = [("test", "pre-commit run pytest")]
    assert dropped_by(failed("pre-commit install-hooks"), only_tests) is None


def test_why_a_check_is_not_run_names_its_preparation_and_the_hosts_it_reached_for() -> None:
    reason = why_not_run(
        failed("pre-commit install-hooks", "fetching https://github.com/x/y.git\nrefused")
    )
    assert reason.startswith("its preparation `pre-commit install-hooks` failed (exit 3): ")
    assert "let the install reach github.com" in reason
    assert "[commands] install" in reason
