"""Terminal output made plain: ANSI escape sequences and control characters removed, and
a line a progress bar redrew with carriage returns kept as it was last drawn."""

from __future__ import annotations

import re

__all__ = ["plain"]

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[ -/]*[0-~]"  # the other two- and three-byte escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI as one C1 character
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def plain(text: str) -> str:
    """``text`` without escape sequences or control characters (newlines and tabs kept);
    of a line redrawn with ``\\r``, only its last drawing."""
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_last_drawing(line) for line in text.split("\n"))
    return _CONTROLS.sub("", text)


def _last_drawing(line: str) -> str:
    drawings = [drawing for drawing in line.split("\r") if drawing]
    return drawings[-1] if drawings else ""
