"""The recipe of a Makefile or justfile target, read (never run): when it runs its tools
through an environment manager the box lacks (``uv run``, ``poetry run``...), the checks
run the recipe's commands themselves, from the venv golem makes."""

from __future__ import annotations

import re

from golem.checks.detect.found import RepoFiles

__all__ = ["JUSTFILES", "MAKEFILES", "recipe", "runner_recipe"]

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
JUSTFILES = ("justfile", "Justfile", ".justfile")
RUNNER = re.compile(r"^(uv|poetry|pdm|pipenv|rye|hatch)\s+run\b")
SUBSTITUTION = re.compile(r"\$[({]|\{\{")


def runner_recipe(files: RepoFiles, tool: str, target: str) -> list[str] | None:
    """The lines of ``target``'s recipe when one runs through an environment manager and
    none needs make's or just's substitutions; None otherwise."""
    lines = recipe(files, tool, target)[1]
    if not lines or not any(RUNNER.match(line) for line in lines):
        return None
    return None if any(SUBSTITUTION.search(line) for line in lines) else lines


def recipe(files: RepoFiles, tool: str, target: str) -> tuple[list[str], list[str] | None]:
    """(prerequisites, recipe lines) of ``target`` in the Makefile (``tool`` make) or
    justfile; ([], None) when it has none."""
    names = MAKEFILES if tool == "make" else JUSTFILES
    text = next((t for t in (files.text(name) for name in names) if t is not None), None)
    return _recipe(text, target, tool) if text is not None else ([], None)


def _recipe(text: str, target: str, tool: str) -> tuple[list[str], list[str] | None]:
    header = re.compile(rf"^@?{re.escape(target)}(?:\s+[^:=\n]*)?:(?!=)[^\n]*$", re.MULTILINE)
    if tool == "make":
        header = re.compile(
            rf"^(?:[^\s:#=]+\s+)*{re.escape(target)}(?:\s+[^:#=\n]+)*\s*::?(?!=)[^\n]*$",
            re.MULTILINE,
        )
    match = header.search(text)
    if match is None:
        return [], None
    after = re.split(r"::?", match[0].split(target, 1)[1], maxsplit=1)[-1]
    prerequisites = [word for word in after.split(";", 1)[0].split() if "$" not in word]
    lines: list[str] = []
    for line in text[match.end() + 1 :].splitlines():
        if not line.strip():
            continue
        if not line.startswith(("\t", " ")):
            break
        lines.append(line.strip().lstrip("@-").strip())
    return prerequisites, [line for line in lines if line and not line.startswith("#")]
