"""Human durations ("90s", "30m", "12h", "7d", 3600) parsed into seconds."""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


def parse_duration(value: str) -> float:
    """Seconds of ``"90s"``, ``"30m"``, ``"12h"``, ``"7d"``, ``"2w"`` or a plain number of
    seconds; ValueError, saying how to write one, for anything else."""
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"{value!r} is not a duration; write it as 90s, 30m, 12h, 7d or 2w")
    number, unit = match.groups()
    return float(number) * _UNITS[unit.lower()]
