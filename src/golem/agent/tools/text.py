"""Small text helpers shared by the tools: numbered lines, sizes, counts."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["count", "human_size", "line_count", "numbered", "split_lines", "utf8"]


def numbered(lines: Sequence[str], first: int) -> str:
    """Lines prefixed with their numbers, as ``cat -n`` prints them."""
    return "\n".join(f"{first + index:6}\t{line}" for index, line in enumerate(lines))


def human_size(size: int) -> str:
    """Bytes for people: ``512 bytes``, ``1.5 KiB``, ``3.2 MiB``."""
    if size < 1024:
        return count(size, "byte")
    value = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f} {unit}"


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``2 lines``; ``1 match``, ``2 matches`` when given the plural."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def line_count(text: str) -> int:
    """Lines of ``text``; a last line without a newline counts too."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their endings (LF or CRLF)."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (JSON allows them) become ``?``."""
    return text.encode("utf-8", "replace")
