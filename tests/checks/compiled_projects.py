"""Go and Rust projects whose test reports the checks read, and the boxes that build them
(fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

GO_MOD = "module example.com/calc\n\ngo 1.19\n"

GO_CODE = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"

GO_TESTS = """\
package calc

import "testing"

func TestAdd(t *testing.T) {
\tif got := Add(2, 3); got != 5 {
\t\tt.Errorf("Add(2, 3) = %d, want 5", got)
\t}
}

func TestOK(t *testing.T) {}

func TestTable(t *testing.T) {
\tfor _, name := range []string{"one", "two"} {
\t\tt.Run(name, func(t *testing.T) {
\t\t\tif name == "two" {
\t\t\t\tt.Fatalf("case %s broke", name)
\t\t\t}
\t\t})
\t}
}

func TestPanic(t *testing.T) {
\tvar m map[string]int
\tm["x"] = 1
}
"""


CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'

LIB_RS = """\
pub fn add(a: i32, b: i32) -> i32 { a - b }

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn adds() { assert_eq!(add(2, 3), 5); }
    #[test]
    fn fine() { assert!(true); }
    #[test]
    #[should_panic]
    fn should() { }
}
"""


IT_RS = '#[test]\nfn integration() { assert!(calc::add(1, 1) == 2, "add(1, 1) should be 2"); }\n'

go = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")

cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")


def go_env(tmp_path: Path) -> dict[str, str]:
    return {"GOCACHE": str(tmp_path / "cache"), "GOPATH": str(tmp_path / "gopath"),
            "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}  # fmt: skip
