"""Text golem did not write, made safe to print on a terminal (light: the commands' help
and `golem runs ls` import it without the agent layer)."""

from __future__ import annotations

from rich.markup import escape

from golem.core.ansi import plain

__all__ = ["printable"]


def printable(text: str) -> str:
    """Text golem did not write (what a box printed, a forge's names, a run's error), safe
    for a terminal: made plain by the one sanitiser (``golem.core.ansi``: no escape
    sequence to move the cursor, retitle the window or write the clipboard, no control or
    invisible character), then its markup escaped."""
    return escape(plain(text))
