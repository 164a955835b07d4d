"""Small failing projects for the report tests: files written to a directory, a real tool
run on them, its output as text."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from golem.checks.reports import REPORT_BUDGET, FailureReport

ESC = "\x1b"


@dataclass(frozen=True)
class Ran:
    """What a tool printed, and how it ended."""

    command: str
    stdout: str
    stderr: str
    exit_code: int


def write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


def run(command: str, cwd: Path, **env: str) -> Ran:
    """``command`` through the shell in ``cwd`` (colours forced by ``env``)."""
    done = subprocess.run(  # noqa: S602 - the tests' own commands
        command, shell=True, cwd=cwd, capture_output=True, timeout=300, check=False,
        env={**os.environ, **env},
    )  # fmt: skip
    decode = lambda data: data.decode("utf-8", "replace")  # noqa: E731
    return Ran(command, decode(done.stdout), decode(done.stderr), done.returncode)


def assert_readable(report: FailureReport, budget: int = REPORT_BUDGET) -> None:
    """In budget, with no escape sequence or carriage return left."""
    assert len(report.text) <= budget
    assert ESC not in report.text
    assert "\r" not in report.text
