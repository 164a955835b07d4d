"""A failing Go or Rust check's report: real ``go test`` and ``cargo test`` runs on small
projects (coloured where the tool colours), parsed into failing tests and messages, and a
package or crate that does not compile named with its compiler errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.checks.reports import failure_report
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
from tests.checks.reporting import ESC, assert_readable, run, write


@go
@pytest.mark.parametrize("verbose", ["", " -v", " -json"])
def test_go_tests_failures_come_out_with_their_log_lines_and_packages(
    tmp_path: Path, verbose: str
) -> None:
    project = write(tmp_path / "calc", {"go.mod": GO_MOD, "calc.go": GO_CODE,
                                        "calc_test.go": GO_TESTS})  # fmt: skip
    ran = run(f"go test{verbose} ./...", project, **go_env(tmp_path))
    assert ran.exit_code == 1
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    assert [f.name for f in report.failures] == [
        "example.com/calc.TestAdd",
        "example.com/calc.TestTable/two",
        "example.com/calc.TestPanic",
    ]
    add, table, panic = report.failures
    assert (add.message, add.file, add.line) == (
        "calc_test.go:7: Add(2, 3) = -1, want 5", "calc_test.go", 7
    )  # fmt: skip
    assert table.message == "calc_test.go:17: case two broke"
    assert panic.message.startswith("panic: assignment to entry in nil map")
    assert (Path(panic.file or "").name, panic.line) == ("calc_test.go", 25)
    assert_readable(report)


@go
def test_a_go_package_that_does_not_build_is_named_with_its_compiler_errors(
    tmp_path: Path,
) -> None:
    broken = 'package calc\n\nfunc Add(a, b int) int { return a - "b" }\n'
    project = write(tmp_path / "calc", {"go.mod": GO_MOD, "calc.go": broken,
                                        "calc_test.go": GO_TESTS})  # fmt: skip
    ran = run("go test ./...", project, **go_env(tmp_path))
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    [failure] = report.failures
    assert failure.name == "example.com/calc"
    assert "calc.go:3" in failure.message
    assert "mismatched types" in failure.message or "cannot convert" in failure.message


@cargo
def test_cargo_tests_failures_come_out_with_their_panics(tmp_path: Path) -> None:
    project = write(tmp_path / "calc", {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB_RS,
                                        "tests/it.rs": IT_RS})  # fmt: skip
    ran = run("cargo test --no-fail-fast --offline", project, CARGO_TERM_COLOR="always",
              CARGO_TARGET_DIR=str(tmp_path / "target"), RUST_BACKTRACE="1")  # fmt: skip
    assert ran.exit_code == 101
    assert ESC in ran.stderr
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    by_name = {f.name: f for f in report.failures}
    assert sorted(by_name) == ["integration", "tests::adds", "tests::should"]
    adds, should = by_name["tests::adds"], by_name["tests::should"]
    integration = by_name["integration"]
    assert adds.message.startswith("assertion `left == right` failed")
    assert "left: -1" in adds.message
    assert (adds.file, adds.line) == ("src/lib.rs", 7)
    assert "stack backtrace" not in adds.message
    assert should.message == "test did not panic as expected"
    assert (integration.message, integration.file) == ("add(1, 1) should be 2", "tests/it.rs")
    assert_readable(report)


@cargo
def test_a_crate_that_does_not_compile_is_named_with_rustcs_errors(tmp_path: Path) -> None:
    broken = LIB_RS.replace("a - b }", 'a - "b" }')
    project = write(tmp_path / "calc", {"Cargo.toml": CARGO_TOML, "src/lib.rs": broken})
    ran = run("cargo test --offline", project, CARGO_TERM_COLOR="always",
              CARGO_TARGET_DIR=str(tmp_path / "target"))  # fmt: skip
    report = failure_report(ran.command, ran.stdout, ran.stderr)
    [failure] = report.failures
    assert failure.name == "calc (did not compile)"
    assert failure.message.startswith("error[E0277]: cannot subtract `&str` from `i32`")
    assert (failure.file, failure.line) == ("src/lib.rs", 1)
    assert_readable(report)


GOTESTSUM = """\
✖  example.com/calc (2ms)
✓  example.com/calc/sub (1ms)

=== Failed
=== FAIL: example.com/calc TestAdd (0.00s)
    calc_test.go:7: Add(2, 3) = -1, want 5

=== FAIL: example.com/calc TestTable/two (0.00s)
    calc_test.go:17: case two broke

=== FAIL: example.com/calc TestTable (0.00s)

DONE 6 tests, 3 failures in 0.412s
"""


def test_gotestsums_recap_names_the_failing_tests_with_their_packages() -> None:
    report = failure_report("gotestsum ./...", GOTESTSUM, "")
    assert [(f.name, f.message) for f in report.failures] == [
        ("example.com/calc.TestAdd", "calc_test.go:7: Add(2, 3) = -1, want 5"),
        ("example.com/calc.TestTable/two", "calc_test.go:17: case two broke"),
    ]
