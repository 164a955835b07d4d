"""Cutting text to a budget of characters: a message to its first lines, an output to its
last, each saying what it left out."""

from __future__ import annotations

__all__ = ["first_lines", "last_lines"]


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
