"""Values a user, a repository, a forge or a box controls, made to attack a terminal, and
the check that a command printed them as text: rich markup (a style, a hyperlink, an
emoji code), an OSC 8 hyperlink, a window title, a screen clear, a C1 control sequence
and a bidirectional override."""

from __future__ import annotations

import re
import unicodedata

MARKUP = "[red]x[/] [link=http://e.example]y[/link]:warning:"
"""Shown as it is: neither styled, nor a link, nor an emoji."""
HOSTILE = MARKUP + "\x1b]8;;http://e.example\x07z\x1b]8;;\x07\x1b]0;t\x07\x1b[2J\x9b1A\u202e"
"""The markup, then sequences that must never reach the terminal (``z`` is shown)."""
SHOWN = MARKUP + "z"
"""What ``HOSTILE`` looks like printed as text."""

GOLEMS_STYLES = re.compile(r"\x1b\[[0-9;]*m")
"""The one sequence golem writes itself: a colour or weight (SGR)."""


def golems_terminal(env: dict[str, str]) -> dict[str, str]:
    """``env`` in which golem writes its styles as on a terminal, on a wide one."""
    return {**env, "FORCE_COLOR": "1", "COLUMNS": "400", "TERM": "xterm-256color"}


def foreign(output: str) -> list[str]:
    """What ``output`` holds, golem's styles left out, that is a control or invisible
    character (newlines aside): an escape sequence golem did not write."""
    return sorted(
        {c for c in GOLEMS_STYLES.sub("", output) if unicodedata.category(c) in ("Cc", "Cf")}
        - {"\n"}
    )


def shown_as_text(output: str) -> str:
    """``output`` as a reader sees it: golem's styles gone."""
    return GOLEMS_STYLES.sub("", output)
