"""Text golem did not write, put into the markdown it writes (a comment, a pull request's
body, a fix prompt): a CI job's, step's or check's name, a status's description, a link a
forge gave, a test's name, a command, an error that carries any of them.

Such text is written as code, an inline span (``code``) or a fenced block (``block``), so
that it renders as the text it is and nothing else: a forge leaves code alone, so no
@-mention notifies anyone, no ``#123`` or URL makes a cross-reference, and no link, image,
HTML tag, heading, emphasis or table cell of its own can be made by it. The fence is
longer than any run of backticks inside, so nothing closes it early; the text is cleaned
(``golem.core.ansi.clean``) first.
"""

from __future__ import annotations

import re

from golem.core.ansi import clean

__all__ = ["INLINE_LIMIT", "block", "code"]

INLINE_LIMIT = 300
"""Characters of one inline span at most (a name is short; a long one is cut)."""
_BACKTICKS = re.compile(r"`+")


def code(text: str, *, table: bool = False, limit: int = INLINE_LIMIT) -> str:
    """``text`` as one inline code span on one line, cut to ``limit`` characters; with
    ``table``, its pipes escaped (a table cell ends at a pipe even inside code)."""
    text = clean(text, multiline=False)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if table:
        text = text.replace("|", "\\|")
    if not text.strip():
        return "` `" if not text else f"`{text}`"
    fence = "`" * (_longest_backticks(text) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def block(text: str) -> str:
    """``text`` as a fenced code block of its own lines."""
    text = clean(text).rstrip("\n")
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence}\n{text}\n{fence}"


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
