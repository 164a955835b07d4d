"""A bounded walk of the repository for test files (to choose pytest or unittest
discovery, and where to start it), never following links or entering vendored trees."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from golem.checks.detect.found import RepoFiles
from golem.context import SKIPPED_DIRS

__all__ = ["TestFiles", "scan_tests"]

MAX_DEPTH = 4
MAX_ENTRIES = 20_000
MAX_READ_FILES = 200
READ_BYTES = 64 * 1024
PYTEST_IMPORT = re.compile(r"^\s*(?:import pytest\b|from pytest\b|from _pytest\b)", re.MULTILINE)
TEST_FUNCTION = re.compile(r"^(?:async )?def test\w*\(", re.MULTILINE)
TEST_CASE = re.compile(r"\bTestCase\b")
PY_TEST_NAME = re.compile(r"^(?:test.*|.*_test)\.py$")


@dataclass
class TestFiles:
    """Python test files of the repository, as POSIX paths relative to its root."""

    python: list[str] = field(default_factory=list)
    imports_pytest: bool = False
    pytest_style: bool = False
    """A test file holds module-level ``def test_...`` functions and no ``TestCase``: only
    pytest runs those (unittest discovery finds nothing in it and passes)."""
    packages: set[str] = field(default_factory=set)
    """Directories that hold an ``__init__.py`` ("" is the root)."""


def scan_tests(files: RepoFiles) -> TestFiles:
    """The Python test files within ``MAX_DEPTH`` directories of the root."""
    found = TestFiles()
    seen = 0
    root = str(files.root)
    for top, dirs, names in os.walk(root):
        rel = os.path.relpath(top, root)
        rel = "" if rel == "." else PurePosixPath(rel).as_posix()
        depth = 0 if not rel else rel.count("/") + 1
        dirs[:] = sorted(
            name
            for name in dirs
            if depth < MAX_DEPTH
            and not name.startswith(".")
            and name not in SKIPPED_DIRS
            and not name.endswith(".egg-info")
        )
        seen += len(names) + len(dirs)
        if "__init__.py" in names:
            found.packages.add(rel)
        found.python += [f"{rel}/{n}" if rel else n for n in sorted(names) if PY_TEST_NAME.match(n)]
        if seen > MAX_ENTRIES:
            break
    read = [text[:READ_BYTES] for rel in found.python[:MAX_READ_FILES] if (text := files.text(rel))]
    found.imports_pytest = any(PYTEST_IMPORT.search(text) for text in read)
    found.pytest_style = any(TEST_FUNCTION.search(t) and not TEST_CASE.search(t) for t in read)
    return found


def unittest_starts(tests: TestFiles) -> list[tuple[str, str]]:
    """(start, top) directories for ``unittest discover`` that reach every test file
    matching its default pattern (``test*.py``). Since Python 3.11 discovery does not enter
    a directory without ``__init__.py``, so each such directory holding tests is a start
    of its own, and a package is started from the first directory above it that is not."""
    pairs: list[tuple[str, str]] = []
    for rel in tests.python:
        path = PurePosixPath(rel)
        if not path.name.startswith("test"):
            continue
        directory = "" if str(path.parent) == "." else path.parent.as_posix()
        pairs.append(_start_of(directory, tests.packages))
    unique = list(dict.fromkeys(pairs))
    if ("", "") in unique:  # discovery from the root reaches packages below it
        unique = [pair for pair in unique if pair == ("", "") or pair[1] != ""]
    return unique


def _start_of(directory: str, packages: set[str]) -> tuple[str, str]:
    if directory not in packages:
        return directory, directory
    child, parent = directory, _parent(directory)
    while parent and parent in packages:
        child, parent = parent, _parent(parent)
    return child, parent


def _parent(directory: str) -> str:
    parent = PurePosixPath(directory).parent.as_posix()
    return "" if parent == "." else parent
