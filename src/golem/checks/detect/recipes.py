"""The recipe of a Makefile or justfile target, read (never run): when it runs its tools
through an environment manager the box lacks (``uv run``, ``poetry run``...), the checks
run the recipe's commands themselves, from the venv golem makes."""

from __future__ import annotations

import re

from golem.checks.detect.found import RepoFiles

__all__ = ["JUSTFILES", "MAKEFILES", "runner_recipe"]

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
JUSTFILES = ("justfile", "Justfile", ".justfile")
RUNNER = re.compile(r"^(uv|poetry|pdm|pipenv|rye|hatch)\s+run\b")
SUBSTITUTION = re.compile(r"\$[({]|\{\{")


def runner_recipe(files: RepoFiles, tool: str, target: str) -> list[str] | None:
    """The lines of ``target``'s recipe when one runs through an environment manager and
    none needs make's or just's substitutions; None otherwise."""
    names = MAKEFILES if tool == "make" else JUSTFILES
    text = next((t for t in (files.text(name) for name in names) if t is not None), None)
    lines = _recipe(text, target, tool) if text is not None else None
    if not lines or not any(RUNNER.match(line) for line in lines):
        return None
    return None if any(SUBSTITUTION.search(line) for line in lines) else lines


def _recipe(text: str, target: str, tool: str) -> list[str] | None:
    header = re.compile(rf"^@?{re.escape(target)}(?:\s+[^:=\n]*)?:(?!=)[^\n]*$", re.MULTILINE)
    if tool == "make":
        header = re.compile(
            rf"^(?:[^\s:#=]+\s+)*{re.escape(target)}(?:\s+[^:#=\n]+)*\s*::?(?!=)[^\n]*$",
            re.MULTILINE,
        )
    match = header.search(text)
    if match is None:
        return None
    lines: list[str] = []
    for line in text[match.end() + 1 :].splitlines():
        if not line.strip():
            continue
        if not line.startswith(("\t", " ")):
            break
        lines.append(line.strip().lstrip("@-").strip())
    return [line for line in lines if line and not line.startswith("#")]
