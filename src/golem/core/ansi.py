"""The one sanitiser: text from outside (a forge, a CI job, an MCP server, a box's output)
made safe to store and show, on a terminal, in a comment, to a model.

``clean`` removes what can act on a terminal or hide text: escape sequences (CSI, OSC such
as hyperlinks and clipboard writes, DCS and the other strings, their one-character C1
forms), control characters (C0 but newline and tab, DEL, C1), bidirectional overrides
and isolates, and the other invisible format characters (zero-width spaces, tag
characters, interlinear annotations; the zero-width joiner and non-joiner stay: scripts
and emoji need them), and the supplementary variation selectors (which can carry hidden
bytes). Lone surrogates become U+FFFD. ``clean_json`` cleans every string of decoded JSON
(where forge data enters golem); ``plain`` is ``clean`` for terminal output, keeping of a
line a progress bar redrew with carriage returns only its last drawing.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, cast

__all__ = ["clean", "clean_json", "plain"]

T = TypeVar("T")

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC: titles, hyperlinks, clipboard
    r"|\x1b[PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]"  # the other two- and three-byte escapes (and an unended string's start)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI as one C1 character
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x90\x98\x9c-\x9f]*(?:\x07|\x1b\\|\x9c)"  # C1 strings
)
"""A string sequence (OSC, DCS...) goes with its payload when it is ended; the start of
one that is not is removed alone, its payload kept as the inert text it then is (a stray
C1 character of mis-decoded text loses nothing after it). A payload stops at the next
introducer, so the scan stays linear."""
_INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
"""Unicode's format characters (category Cf) but the joiners U+200C and U+200D, and the
supplementary variation selectors."""
_REMOVED = re.compile(f"[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f{_INVISIBLE}]+")
_SURROGATES = re.compile("[\ud800-\udfff]")
_LINE_BREAKS = re.compile("\r\n?|[\u2028\u2029]")
_SPACES = re.compile("[\t\n]")
_SUSPECT = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\ud800-\udfff\u2028\u2029{_INVISIBLE}]")
"""Any character ``clean`` may change: text without one is returned as it is."""


def clean(text: str, *, multiline: bool = True) -> str:
    """``text`` without escape sequences, control characters or invisible format
    characters; line breaks (``\\r\\n``, ``\\r``, U+2028, U+2029) become ``\\n``, and with
    ``multiline`` False newlines and tabs become spaces (a name, a title, a label)."""
    if _SUSPECT.search(text) is None and (multiline or _SPACES.search(text) is None):
        return text
    text = _REMOVED.sub("", _ESCAPES.sub("", _LINE_BREAKS.sub("\n", text)))
    text = _SURROGATES.sub("\ufffd", text)
    return text if multiline else _SPACES.sub(" ", text)


def clean_json(value: T) -> T:
    """Decoded JSON with ``clean`` applied to every string in it, keys included: changed in
    place (what ``json.loads`` made is the caller's own), and without recursion, so that
    no nesting the decoder accepted can exhaust the stack here."""
    if isinstance(value, str):
        return cast(T, clean(value))
    pending: list[Any] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = clean(item)
                elif isinstance(item, list | dict):
                    pending.append(item)
        elif isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for key, item in items:
                if isinstance(item, list | dict):
                    pending.append(item)
                name = clean(key) if isinstance(key, str) else key
                node[name] = clean(item) if isinstance(item, str) else item
    return value


def plain(text: str) -> str:
    """Terminal output (a check's, a CI job's log) as ``clean`` text; of a line redrawn
    with ``\\r``, only its last drawing."""
    text = _ESCAPES.sub("", text).replace("\r\n", "\n")
    if "\r" in text:
        text = "\n".join(_last_drawing(line) for line in text.split("\n"))
    return clean(text)


def _last_drawing(line: str) -> str:
    drawings = [drawing for drawing in line.split("\r") if drawing]
    return drawings[-1] if drawings else ""
