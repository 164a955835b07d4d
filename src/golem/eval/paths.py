"""Which files of a change are its tests: as SWE-bench splits a pull request into the test
patch (hidden from the agent) and the gold patch (the fix), by the file's directories and
name, for every ecosystem golem knows."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

__all__ = ["is_test_path", "split_paths"]

TEST_DIRECTORIES = frozenset(
    {"test", "tests", "testing", "__tests__", "spec", "specs", "e2e", "testdata", "t"}
)
TEST_NAMES = re.compile(
    r"""^(?:
        test_.*\.py | .*_test\.py | conftest\.py | tests?\.py    # Python
      | .*_test\.go                                            # Go
      | .*\.(?:test|spec)\.[cm]?[jt]sx?                          # JavaScript, TypeScript
      | .*(?:Test|Tests|IT)\.(?:java|kt|scala|cs)                # JVM, .NET
      | .*_spec\.rb | .*_test\.rb | test_.*\.rb                  # Ruby
      | .*_test\.(?:exs|dart) | .*Tests?\.swift                  # Elixir, Dart, Swift
      | .*\.t | .*\.bats                                         # Perl, bats
    )$""",
    re.VERBOSE,
)


def is_test_path(path: str) -> bool:
    """Whether ``path`` (relative, POSIX) is a test file: it lies under a test directory
    (``tests/``, ``__tests__/``, ``spec/``...) or is named like one (``test_x.py``,
    ``x_test.go``, ``x.test.ts``, ``XTest.java``...)."""
    parts = PurePosixPath(path).parts
    if any(part.lower() in TEST_DIRECTORIES for part in parts[:-1]):
        return True
    return bool(parts) and bool(TEST_NAMES.match(parts[-1]))


def split_paths(paths: list[str]) -> tuple[list[str], list[str]]:
    """``paths`` as (tests, sources)."""
    tests = [path for path in paths if is_test_path(path)]
    return tests, [path for path in paths if not is_test_path(path)]
