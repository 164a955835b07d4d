"""Slack's message markup, both ways. Into golem: a message's text as plain text, its
mentions, channels and links spelled out (``read``), the links listed. Out of golem: text
golem did not write goes into a message escaped (``escape``: no ``<!channel>``, user
mention, link or channel reference of its own) or as code (``code``, ``block``), as
``golem.forge.markdown`` does for a forge's comments."""

from __future__ import annotations

import html
import re

__all__ = ["block", "code", "escape", "link", "links", "read"]

_ANGLED = re.compile(r"<([^<>\n]{1,2000})>")
_URL = re.compile(r"(?:https?|mailto):[^\s|<>]{1,2000}")
_GRAVE = "\u02cb"  # a backtick inside a code span would end it


def escape(text: str) -> str:
    """``text`` as Slack shows it literally: its ``&``, ``<`` and ``>`` escaped, so nothing
    in it is a mention, a link or a channel reference."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(text: str) -> str:
    """``text`` as one inline code span (on one line)."""
    flat = " ".join(text.split())
    return f"`{escape(flat.replace('`', _GRAVE))}`" if flat else "``"


def block(text: str) -> str:
    """``text`` as a code block."""
    return f"```\n{escape(text.replace('```', _GRAVE * 3))}\n```"


def link(url: str, label: str) -> str:
    """A link to ``url`` (an http(s) address golem made, a pull request's) labelled
    ``label``; any other address is shown as code, never linked."""
    if re.fullmatch(r"https?://[^\s|<>]{1,2000}", url) is None:
        return f"{escape(label)} ({code(url)})"
    return f"<{url}|{escape(label).replace('|', '/')}>"


def read(text: str) -> str:
    """A message's text as plain text: ``<@U1>`` is ``@U1``, ``<#C1|general>`` is
    ``#general``, ``<https://x|label>`` is ``label (https://x)``; entities decoded."""
    return html.unescape(_ANGLED.sub(_spelled, text))


def links(text: str) -> list[str]:
    """The addresses a message's text links to (as Slack wrote them), each once."""
    found = [m.group(0) for angled in _ANGLED.finditer(text) for m in [_URL.match(angled[1])] if m]
    return list(dict.fromkeys(found))


def _spelled(match: re.Match[str]) -> str:
    target, _, label = match[1].partition("|")
    if target.startswith("@"):
        return f"@{label or target[1:]}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        return label or f"@{target[1:].split('^')[0]}"
    return f"{label} ({target})" if label and label != target else target
