"""Where a piece of text occurs in a file, and which lines come closest when it does not.

Pure functions over strings, for ``edit``: exact occurrences, then lines that match when
whitespace is ignored, then lines that are merely similar (difflib)."""

from __future__ import annotations

import difflib
import heapq
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Candidate", "closest", "has_line_numbers", "line_at", "occurrences"]

FUZZY_CUTOFF = 0.6
SHORTLIST = 20  # windows that difflib compares in full
TOKEN = re.compile(r"\w+|[^\w\s]")
LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


@dataclass(frozen=True)
class Candidate:
    """Lines ``first``..``last`` (1-based) of a file that resemble the text looked for."""

    first: int
    last: int
    score: float
    whitespace_only: bool
    """True when the lines equal the text once all whitespace is ignored."""


def occurrences(text: str, old: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of ``old`` (as str.replace sees
    them)."""
    found: list[int] = []
    start = text.find(old)
    while start >= 0:
        found.append(start)
        start = text.find(old, start + len(old))
    return found


def line_at(text: str, index: int) -> int:
    """The 1-based line number of the character at ``index``."""
    return text.count("\n", 0, index) + 1


def has_line_numbers(old: str) -> bool:
    """True when every line of ``old`` starts like a line of read's numbered output."""
    lines = [line for line in old.split("\n") if line.strip()]
    return bool(lines) and all(LINE_NUMBER_PREFIX.match(line) for line in lines)


def closest(text: str, old: str, limit: int = 3) -> list[Candidate]:
    """Lines of ``text`` that come closest to ``old``, best first.

    Lines that equal it when whitespace is ignored win; otherwise up to ``limit`` windows
    of as many lines as ``old`` that are at least 60% similar."""
    lines = text.split("\n")
    wanted = _trimmed(old.split("\n"))
    if not wanted:
        return []
    exact = _whitespace_matches(lines, wanted)
    if exact:
        return exact[:limit]
    return _similar(lines, wanted, limit)


def _trimmed(lines: list[str]) -> list[str]:
    """``lines`` without blank lines at either end."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _squeezed(line: str) -> str:
    return "".join(line.split())


def _whitespace_matches(lines: Sequence[str], wanted: Sequence[str]) -> list[Candidate]:
    """Windows whose text equals ``wanted`` once whitespace is ignored (the first and last
    lines of ``wanted`` may be the end and the start of a line)."""
    squeezed = [_squeezed(line) for line in lines]
    parts = [_squeezed(line) for line in wanted]
    size = len(parts)
    found = []
    for first in range(len(lines) - size + 1):
        window = squeezed[first : first + size]
        if size == 1:
            hit = parts[0] in window[0]
        else:
            hit = (
                window[0].endswith(parts[0])
                and window[-1].startswith(parts[-1])
                and window[1:-1] == parts[1:-1]
            )
        if hit:
            found.append(Candidate(first + 1, first + size, 1.0, whitespace_only=True))
    return found


def _similar(lines: Sequence[str], wanted: Sequence[str], limit: int) -> list[Candidate]:
    """The best non-overlapping windows of ``len(wanted)`` lines by difflib's ratio,
    among the windows that share the most tokens with ``wanted``."""
    size = min(len(wanted), len(lines))
    stripped = [line.strip() for line in lines]
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(line.strip() for line in wanted))
    scored: list[tuple[float, int]] = []
    for first in _shortlist(lines, wanted):
        matcher.set_seq1("\n".join(stripped[first : first + size]))
        if (score := matcher.ratio()) >= FUZZY_CUTOFF:
            scored.append((score, first))
    chosen: list[Candidate] = []
    for score, first in sorted(scored, key=lambda item: (-item[0], item[1])):
        last = first + size
        if all(last < c.first or first >= c.last for c in chosen):
            chosen.append(Candidate(first + 1, last, score, whitespace_only=False))
        if len(chosen) == limit:
            break
    return chosen


def _shortlist(lines: Sequence[str], wanted: Sequence[str]) -> list[int]:
    """First lines of the windows that share the most tokens with ``wanted`` (a rolling
    Dice coefficient over token counts: linear in the file, unlike difflib)."""
    want = Counter(token for line in wanted for token in TOKEN.findall(line))
    want_total = sum(want.values())
    tokens = [TOKEN.findall(line) for line in lines]
    size = min(len(wanted), len(lines))
    have: Counter[str] = Counter()
    common = total = 0
    scores: list[tuple[float, int]] = []
    for index, line_tokens in enumerate(tokens):
        for token in line_tokens:
            common += have[token] < want[token]
            have[token] += 1
        total += len(line_tokens)
        if index >= size:
            for token in tokens[index - size]:
                have[token] -= 1
                common -= have[token] < want[token]
            total -= len(tokens[index - size])
        if index >= size - 1 and total + want_total:
            scores.append((2 * common / (total + want_total), index - size + 1))
    return [first for _, first in heapq.nlargest(SHORTLIST, scores)]
