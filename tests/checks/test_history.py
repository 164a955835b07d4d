"""What a repository's checks did before, kept between runs: results on a base commit, and
tests seen flaky. A file that cannot be read (missing, not JSON, the wrong shape) is no
history, never an error; a later write replaces it whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.checks import (
    CheckResult,
    TestFailure,
    baseline_key,
    flaky_before,
    flaky_file,
    load_baseline,
    record_flaky,
    store_baseline,
)
from golem.checks.history import WHOLE


def result(command: str = "pytest", *failing: str, passed: bool = False) -> CheckResult:
    return CheckResult(
        name="test",
        command=command,
        passed=passed,
        exit_code=0 if passed else 1,
        duration=1.0,
        failures=[TestFailure(name=name) for name in failing],
    )


def test_a_bases_results_are_kept_per_key_one_per_check(tmp_path: Path) -> None:
    key = baseline_key({"repo": "r", "base": "abc"})
    other = baseline_key({"repo": "r", "base": "def"})
    store_baseline(tmp_path, key, result("pytest", "t::a"))
    store_baseline(tmp_path, key, result("ruff check"))
    store_baseline(tmp_path, key, result("pytest", "t::b"))  # replaces the first

    kept = load_baseline(tmp_path, key)

    assert [(r.command, [f.name for f in r.failures]) for r in kept] == [
        ("ruff check", []),
        ("pytest", ["t::b"]),
    ]
    assert load_baseline(tmp_path, other) == []
    assert key != other
    assert key == baseline_key({"base": "abc", "repo": "r"})  # order of the parts is no matter


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"results": 3}', '{"results": [{}]}'])
def test_an_unreadable_baseline_file_is_no_history_and_a_write_replaces_it(
    tmp_path: Path, text: str
) -> None:
    key = baseline_key({"repo": "r"})
    path = tmp_path / "cache" / "baseline" / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)

    assert load_baseline(tmp_path, key) == []
    store_baseline(tmp_path, key, result())
    assert [r.command for r in load_baseline(tmp_path, key)] == ["pytest"]


def test_flaky_tests_are_remembered_per_command_and_a_whole_check_as_such(
    tmp_path: Path,
) -> None:
    path = flaky_file(tmp_path, "tenant", "owner/repo")
    assert flaky_before(path, result("pytest", "t::a", "t::b")) == []

    record_flaky(path, result("pytest", "t::a"))
    record_flaky(path, result("make lint"))

    assert flaky_before(path, result("pytest", "t::a", "t::b")) == ["t::a"]
    assert flaky_before(path, result("pytest -x", "t::a")) == []  # another command
    assert flaky_before(path, result("make lint")) == [WHOLE]
    assert flaky_file(tmp_path, "other", "owner/repo") != path


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"pytest": "t::a"}'])
def test_an_unreadable_flaky_file_is_no_history(tmp_path: Path, text: str) -> None:
    path = flaky_file(tmp_path, "", "repo")
    path.parent.mkdir(parents=True)
    path.write_text(text)

    assert flaky_before(path, result("pytest", "t::a")) == []
    record_flaky(path, result("pytest", "t::a"))
    assert flaky_before(path, result("pytest", "t::a")) == ["t::a"]
