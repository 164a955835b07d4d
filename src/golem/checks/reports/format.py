"""What a parser of one test framework's output gives the report: how to recognise its
output, the failing tests in it, and (where the output names them) the passing ones; and
cutting text to a budget of characters: a message to its first lines, an output to its
last, each saying what it left out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from golem.checks.contracts import TestFailure

__all__ = ["Format", "first_lines", "last_lines", "merge"]


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


def first_lines(text: str, limit: int, *, max_lines: int = 12) -> str:
    """The start of ``text``: at most ``max_lines`` lines and ``limit`` characters, with
    `…` where it was cut."""
    text = text.strip("\n")
    lines = text.splitlines()
    cut = len(lines) > max_lines
    shown = "\n".join(lines[:max_lines])
    if len(shown) > limit:
        shown, cut = shown[: max(limit - 1, 0)], True
    if cut:
        shown = shown.rstrip() + "…"
    return shown


def last_lines(text: str, limit: int) -> str:
    """The end of ``text`` in at most ``limit`` characters, starting at a line's start
    where one is near, after a line saying how many characters were left out."""
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    note_room = 60
    if limit <= note_room:
        return text[-limit:] if limit > 0 else ""
    kept = text[len(text) - (limit - note_room) :]
    newline = kept.find("\n")
    if 0 <= newline < len(kept) // 2:
        kept = kept[newline + 1 :]
    note = f"[… {len(text) - len(kept)} earlier characters left out]"
    return f"{note}\n{kept}"
