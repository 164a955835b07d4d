"""The token estimate every context section is measured with, and cutting text to fit one.

The estimate is deliberately conservative: one token per three bytes of UTF-8, rounded up.
Tokenizers of current models average 3.5 to 4.5 bytes per token on English prose and code,
so the estimate overshoots them, and a context fitted to it fits the real model too. Text
in scripts that take 2 or 3 bytes per character (CJK, Cyrillic) runs close to one token
per character, which the estimate still covers.
"""

from __future__ import annotations

__all__ = ["BYTES_PER_TOKEN", "estimate_tokens", "truncate_to_tokens"]

BYTES_PER_TOKEN = 3
"""How many UTF-8 bytes the estimate counts as one token."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: its UTF-8 length divided by three, rounded up."""
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, int]:
    """``text`` cut on a line boundary so that it, with a closing note saying where it was
    cut, fits in ``max_tokens``; and the number of whole lines kept.

    ``text`` comes back unchanged when it already fits; ``("", 0)`` when not even the note
    fits. The note says how many lines were left out, so the agent knows to read on.
    """
    if estimate_tokens(text) <= max_tokens:
        return text, text.count("\n") + 1
    lines = text.splitlines()
    total = len(lines)
    budget = max_tokens * BYTES_PER_TOKEN
    kept: list[str] = []
    used = 0
    for line in lines:
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        if used + size + _note_size(len(kept) + 1, total) > budget:
            break
        kept.append(line)
        used += size
    note = _note(len(kept), total)
    if used + len(note.encode()) > budget:
        return "", 0
    return "\n".join([*kept, note]), len(kept)


def _note(kept: int, total: int) -> str:
    return f"[... cut to fit the context budget: the last {total - kept} of {total} lines]"


def _note_size(kept: int, total: int) -> int:
    return len(_note(kept, total).encode())
