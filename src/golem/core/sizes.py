"""Human byte sizes ("256m", "1g", "512k", 1048576) parsed into integers."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

__all__ = ["ByteSize", "format_size", "parse_size"]

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value: str | int) -> int:
    """Parse ``"256m"``, ``"1.5g"``, ``"100MiB"`` or a plain integer into bytes."""
    if isinstance(value, bool):
        # ValueError, not TypeError: pydantic turns only ValueError into a validation error
        raise ValueError("a size must be a number of bytes or a string such as '256m'")  # noqa: TRY004
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; write it as 512k, 256m or 2g")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


def format_size(size: int) -> str:
    """Format bytes compactly: 268435456 -> '256m'."""
    for unit in ("t", "g", "m", "k"):
        factor = _UNITS[unit]
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


ByteSize = Annotated[
    int,
    BeforeValidator(parse_size),
    PlainSerializer(format_size, return_type=str, when_used="json"),
]
"""An integer number of bytes that also accepts strings like ``"256m"``."""
