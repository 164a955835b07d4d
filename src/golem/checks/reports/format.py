"""What a parser of one test framework's output gives the report: how to recognise its
output, the failing tests in it, and (where the output names them) the passing ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from golem.checks.contracts import TestFailure

__all__ = ["Format", "merge"]


@dataclass(frozen=True)
class Format:
    """One framework's output format. ``recognises`` looks at the (plain) output itself;
    ``hints`` are words of a command that make the format worth trying first; ``passes``
    names the tests the output says passed, named as ``parse`` names failures (None: the
    format never names them)."""

    name: str
    hints: tuple[str, ...]
    recognises: Callable[[str], bool]
    parse: Callable[[str], list[TestFailure]]
    passes: Callable[[str], list[str]] | None = None


def merge(failures: list[TestFailure]) -> list[TestFailure]:
    """One failure per test name, in order of first appearance; a later mention fills in
    what an earlier one lacked (a summary line's name, a section's message)."""
    merged: dict[str, TestFailure] = {}
    for failure in failures:
        known = merged.get(failure.name)
        if known is None:
            merged[failure.name] = failure
            continue
        merged[failure.name] = known.model_copy(
            update={
                "message": known.message or failure.message,
                "file": known.file or failure.file,
                "line": known.line if known.line is not None else failure.line,
            }
        )
    return list(merged.values())
