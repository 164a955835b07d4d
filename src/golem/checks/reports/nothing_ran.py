"""Whether a test command ran no test at all: such a run verifies nothing, whatever its
exit code (``python3 -m unittest discover`` before 3.12 prints "Ran 0 tests ... OK" and
exits 0 on a repository of pytest-style tests)."""

from __future__ import annotations

import re

__all__ = ["nothing_ran"]

_UNITTEST = re.compile(r"^Ran 0 tests in ", re.M)
_SOME_RAN = re.compile(  # any runner of a composite command saying tests ran
    r"^Ran [1-9]\d* tests? in |\b[1-9]\d* passed\b|^ok\s+\S+\s+\d|^running [1-9]\d* tests?$",
    re.M,
)
_PYTEST = re.compile(r"^(?:=+ )?no tests ran\b|^collected 0 items\b", re.M)
_CARGO = re.compile(r"^running (\d+) tests?$", re.M)
_GO_PACKAGE = re.compile(r"^(ok|\?|FAIL|---)\s", re.M)
_GO_NONE = re.compile(r"^(?:\?\s+\S+\s+\[no test files\]|ok\s+\S+\s+\S+\s+\[no tests to run\])$")


def nothing_ran(stdout: str, stderr: str, *, exit_code: int) -> str | None:
    """What in the output says no test ran (None: tests ran, or it does not say)."""
    text = f"{stdout}\n{stderr}"
    if _SOME_RAN.search(text):
        return None
    if _UNITTEST.search(text):
        return "unittest found no test (`Ran 0 tests`)"
    if exit_code == 5 and _PYTEST.search(text):  # pytest's exit code for "collected nothing"
        return "pytest collected no test (`no tests ran`, exit 5)"
    if (counts := _CARGO.findall(text)) and all(count == "0" for count in counts):
        return "cargo test ran no test (every `running N tests` is 0)"
    return _go_nothing(text)


def _go_nothing(text: str) -> str | None:
    packages = [line.strip() for line in text.splitlines() if _GO_PACKAGE.match(line)]
    if packages and all(_GO_NONE.match(line) for line in packages):
        return "go test ran no test (every package: `[no test files]`)"
    return None
