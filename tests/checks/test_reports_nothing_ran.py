"""A test command that ran no test verifies nothing: real unittest, pytest, go test and
cargo test runs on projects with no test they can find fail with "ran no tests"; the same
tools running a test pass."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from golem.checks.reports import check_result
from golem.core.events import ExitEvent
from tests.checks.reporting import Ran, run, write

PYTEST_STYLE = {"test_calc.py": "def test_add():\n    assert 1 + 1 == 2\n"}
UNITTEST_STYLE = {
    "test_calc.py": "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n"
}
PYTHON = sys.executable


def judged(ran: Ran) -> tuple[bool, str | None]:
    ended = ExitEvent(exit_code=ran.exit_code, duration=0.1)
    result = check_result("test", ran.command, ended, ran.stdout, ran.stderr, memory=None)
    return result.passed, result.reason


def test_unittest_finding_no_test_case_ran_no_tests(tmp_path: Path) -> None:
    ran = run("python3 -m unittest discover", write(tmp_path, PYTEST_STYLE))
    assert ran.exit_code == 0  # Python 3.11: "Ran 0 tests ... OK"
    passed, reason = judged(ran)
    assert not passed
    assert reason is not None
    assert reason.startswith("ran no tests: unittest found no test")
    assert judged(run("python3 -m unittest discover", write(tmp_path / "u", UNITTEST_STYLE)))[0]


def test_pytest_collecting_nothing_ran_no_tests(tmp_path: Path) -> None:
    ran = run(f"{PYTHON} -m pytest -q -p no:cacheprovider", write(tmp_path, {"calc.py": "x = 1\n"}))
    assert ran.exit_code == 5
    passed, reason = judged(ran)
    assert (passed, reason is not None and reason.startswith("ran no tests: pytest")) == (
        False, True,
    )  # fmt: skip
    ok = run(f"{PYTHON} -m pytest -q -p no:cacheprovider", write(tmp_path / "p", PYTEST_STYLE))
    assert judged(ok) == (True, None)


@pytest.mark.skipif(shutil.which("go") is None, reason="needs go")
def test_go_test_with_no_test_files_ran_no_tests(tmp_path: Path) -> None:
    files = {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc.go": "package calc\n"}
    env = {"GOCACHE": str(tmp_path / "cache"), "GOFLAGS": "-mod=mod"}
    ran = run("go test ./...", write(tmp_path / "none", files), **env)
    assert ran.exit_code == 0, ran.stderr
    passed, reason = judged(ran)
    assert not passed
    assert reason is not None
    assert reason.startswith("ran no tests: go test")
    tested = {
        **files,
        "calc_test.go": 'package calc\n\nimport "testing"\n\nfunc TestX(t *testing.T) {}\n',
    }
    assert judged(run("go test ./...", write(tmp_path / "some", tested), **env)) == (True, None)


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo")
def test_cargo_test_with_no_test_ran_no_tests(tmp_path: Path) -> None:
    toml = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'
    files = {"Cargo.toml": toml, "src/lib.rs": "pub fn add(a: i32) -> i32 { a }\n"}
    env = {"CARGO_TARGET_DIR": str(tmp_path / "target"), "CARGO_NET_OFFLINE": "true"}
    ran = run("cargo test", write(tmp_path / "none", files), **env)
    assert ran.exit_code == 0, ran.stderr
    passed, reason = judged(ran)
    assert not passed
    assert reason is not None
    assert reason.startswith("ran no tests: cargo test")
    tested = {**files, "src/lib.rs": files["src/lib.rs"] + "#[test]\nfn it() {}\n"}
    assert judged(run("cargo test", write(tmp_path / "some", tested), **env)) == (True, None)


def test_a_composite_command_where_one_runner_ran_tests_ran_tests(tmp_path: Path) -> None:
    both = f"python3 -m unittest discover; {PYTHON} -m pytest -q -p no:cacheprovider"
    ran = run(both, write(tmp_path, PYTEST_STYLE))
    assert ran.exit_code == 0
    assert judged(ran) == (True, None)
