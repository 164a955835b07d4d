"""What a provider's answer says about its limits: ``retry-after`` and ``retry-after-ms``,
and the rate-limit headers (Anthropic's ``anthropic-ratelimit-<quota>-limit|remaining|
reset``, OpenAI's ``x-ratelimit-limit|remaining|reset-<quota>``).

The provider is trusted for its own limits but never beyond reason: a value that is not a
number, not finite, negative, or further away than ``LONGEST_WAIT`` is not believed (an
unreadable value is ignored, a far one is cut to that bound), so no header can make golem
wait for ever or crash it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

__all__ = ["LONGEST_WAIT", "Quota", "RateHeaders", "read_rate_headers"]

LONGEST_WAIT = 86_400.0
"""The longest wait a header is believed for (a day); a longer one is cut to it."""

_ANTHROPIC = re.compile(r"anthropic-ratelimit-([a-z-]+)-(limit|remaining|reset)")
_OPENAI = re.compile(r"x-ratelimit-(limit|remaining|reset)-([a-z-]+)")
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)(ms|h|m|s))")
_LONGEST_TEXT = 64  # characters: a header value longer than this is not a number or a time


@dataclass(frozen=True)
class Quota:
    """One limit the provider counts (``requests``, ``tokens``, ``input-tokens``...)."""

    name: str
    header: str
    """The header that says what is left, e.g. ``anthropic-ratelimit-requests-remaining``."""
    remaining: int | None = None
    limit: int | None = None
    reset: float | None = None
    """When it is full again (epoch seconds)."""


@dataclass(frozen=True)
class RateHeaders:
    """The limits one answer told."""

    retry_after: float | None = None
    """Seconds the provider asks to wait, from ``retry_after_header``."""
    retry_after_header: str | None = None
    """``retry-after-ms: 250`` or ``retry-after: 3``: the header that said so, as sent."""
    quotas: tuple[Quota, ...] = ()

    def quota(self, name: str) -> Quota | None:
        """The quota of that name, if the answer told it."""
        return next((quota for quota in self.quotas if quota.name == name), None)


def read_rate_headers(headers: Mapping[str, str] | None, now: float) -> RateHeaders:
    """What ``headers`` (an answer's, any case) say about the provider's limits, at
    ``now`` (epoch seconds)."""
    if not headers:
        return RateHeaders()
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    retry_after, said = _retry_after(lowered, now)
    return RateHeaders(retry_after, said, _quotas(lowered, now))


def _retry_after(headers: dict[str, str], now: float) -> tuple[float | None, str | None]:
    """``retry-after-ms`` (OpenAI's and Anthropic's SDKs read it first), else
    ``retry-after`` in seconds or as an HTTP date."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return min(millis / 1000, LONGEST_WAIT), f"retry-after-ms: {headers['retry-after-ms']}"
    raw = headers.get("retry-after")
    if raw is None:
        return None, None
    seconds = _number(raw)
    if seconds is None:
        when = _http_date(raw)
        seconds = None if when is None else max(when - now, 0.0)
    if seconds is None:
        return None, None
    return min(seconds, LONGEST_WAIT), f"retry-after: {raw.strip()[:_LONGEST_TEXT]}"


def _quotas(headers: dict[str, str], now: float) -> tuple[Quota, ...]:
    fields: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}
    for name, value in headers.items():
        anthropic, openai = _ANTHROPIC.fullmatch(name), _OPENAI.fullmatch(name)
        if anthropic is not None:
            quota, part = anthropic.group(1), anthropic.group(2)
        elif openai is not None:
            part, quota = openai.group(1), openai.group(2)
        else:
            continue
        fields.setdefault(quota, {})[part] = value
        if part == "remaining":
            names[quota] = name
    return tuple(
        Quota(
            name=quota,
            header=names.get(quota, f"{quota}-remaining"),
            remaining=_count(parts.get("remaining")),
            limit=_count(parts.get("limit")),
            reset=_reset(parts.get("reset"), now),
        )
        for quota, parts in sorted(fields.items())
    )


def _number(raw: str | None) -> float | None:
    """A non-negative finite number, or None."""
    if raw is None or len(raw) > _LONGEST_TEXT:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _count(raw: str | None) -> int | None:
    value = _number(raw)
    return None if value is None else int(min(value, 2**31 - 1))


def _reset(raw: str | None, now: float) -> float | None:
    """A reset as an instant: Anthropic's RFC 3339 time, OpenAI's duration (``1s``,
    ``6m0s``, ``20ms``), or plain seconds; at most LONGEST_WAIT away."""
    if raw is None or len(raw) > _LONGEST_TEXT:
        return None
    text = raw.strip()
    seconds = _number(text)
    if seconds is None:
        seconds = _duration(text)
    if seconds is not None:
        return now + min(seconds, LONGEST_WAIT)
    when = _iso_time(text)
    if when is None:
        return None
    return min(max(when, now), now + LONGEST_WAIT)


def _duration(text: str) -> float | None:
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def _iso_time(text: str) -> float | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.timestamp()


def _http_date(text: str) -> float | None:
    if len(text) > _LONGEST_TEXT:
        return None
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None
