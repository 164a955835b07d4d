"""Each test's outcome in a real run's output: the failing tests as the failure report names
them, and the passing ones named the same way, for every runner whose output names them
(pytest -rA and -v, unittest -v, go test -v, cargo test, node --test's TAP, JUnit XML); a
runner that names no passing test says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from golem.checks import find_outcomes
from tests.checks.compiled_projects import (
    CARGO_TOML,
    GO_CODE,
    GO_MOD,
    GO_TESTS,
    IT_RS,
    LIB_RS,
    cargo,
    go,
    go_env,
)
from tests.checks.node_projects import NODE_TESTS, node
from tests.checks.python_projects import CALC, PYTEST
from tests.checks.reporting import run, write

UNITTESTS = {
    "test_calc.py": '''\
import unittest


class Calc(unittest.TestCase):
    def test_adds(self):
        self.assertEqual(1 + 1, 3)

    def test_fine(self):
        """A test with a docstring."""

    @unittest.expectedFailure
    def test_known(self):
        self.assertTrue(False)

    @unittest.skip("not today")
    def test_skipped(self):
        pass
''',
}


@pytest.mark.parametrize("flags", ["-rA", "-v"])
def test_pytests_passing_tests_are_named_by_node_id_beside_its_failures(
    tmp_path: Path, flags: str
) -> None:
    ran = run(f"{PYTEST} {flags}", write(tmp_path, CALC))
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert outcomes.names_passes
    assert outcomes.passed == {"test_calc.py::test_ok", "test_calc.py::test_param[1]"}
    assert outcomes.failed == {
        "test_calc.py::test_add", "test_calc.py::TestThings::test_raises",
        "test_calc.py::test_param[2]", "test_calc.py::test_needs",
    }  # fmt: skip


def test_pytests_junit_xml_names_the_same_outcomes(tmp_path: Path) -> None:
    ran = run(f"{PYTEST} --junitxml=report.xml", write(tmp_path, CALC))
    junit = [(tmp_path / "report.xml").read_text()]
    outcomes = find_outcomes("make test", "", junit)
    assert "test_calc.test_ok" in outcomes.passed
    assert "test_calc.test_add" in outcomes.failed
    assert ran.exit_code == 1


def test_unittest_verbose_names_passes_as_its_failures_are_named(tmp_path: Path) -> None:
    ran = run(f"{sys.executable} -m unittest -v", write(tmp_path, UNITTESTS))
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert outcomes.failed == {"test_calc.Calc.test_adds"}
    assert outcomes.passed == {"test_calc.Calc.test_fine", "test_calc.Calc.test_known"}


def test_unittest_without_verbose_names_no_passing_test(tmp_path: Path) -> None:
    ran = run(f"{sys.executable} -m unittest", write(tmp_path, UNITTESTS))
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert outcomes.failed == {"test_calc.Calc.test_adds"}
    assert outcomes.passed == frozenset()


@go
def test_go_tests_verbose_passes_carry_their_package(tmp_path: Path) -> None:
    project = write(tmp_path / "calc", {"go.mod": GO_MOD, "calc.go": GO_CODE,
                                        "calc_test.go": GO_TESTS})  # fmt: skip
    ran = run("go test ./...", project, **{**go_env(tmp_path), "GOFLAGS": "-mod=mod -v"})
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert outcomes.passed == {"example.com/calc.TestOK", "example.com/calc.TestTable/one"}
    assert outcomes.failed == {
        "example.com/calc.TestAdd", "example.com/calc.TestTable/two", "example.com/calc.TestPanic"
    }  # fmt: skip


@cargo
def test_cargo_tests_passes_are_named_as_its_failures(tmp_path: Path) -> None:
    project = write(tmp_path / "calc", {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB_RS,
                                        "tests/it.rs": IT_RS})  # fmt: skip
    ran = run("cargo test --no-fail-fast --offline", project,
              CARGO_TARGET_DIR=str(tmp_path / "target"))  # fmt: skip
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert outcomes.passed == {"tests::fine"}
    assert outcomes.failed == {"integration", "tests::adds", "tests::should"}


@node
def test_node_tests_tap_names_passes_under_their_suites(tmp_path: Path) -> None:
    ran = run("node --test", write(tmp_path, {"calc.test.mjs": NODE_TESTS}))
    outcomes = find_outcomes(ran.command, ran.stdout + ran.stderr)
    assert "fine" in outcomes.passed
    assert any(name.endswith("nested ok") for name in outcomes.passed)
    assert not any(name.endswith("suite") for name in outcomes.passed)
    assert "adds numbers" in outcomes.failed
