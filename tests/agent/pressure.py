"""A provider under pressure, for the wire servers: at most ``limit`` requests per window
(beyond it, 429 with ``retry-after``), its rate-limit headers on every answer in the
provider's own dialect, and a switch that takes it down (overloaded) and brings it back.

It counts every request it receives per window, so a test asserts on what the provider
saw, not on timing::

    pressure = Pressure(anthropic_dialect(), limit=4, window=0.25, reply=coder)
    server.otherwise(pressure)
    ...
    assert max(pressure.per_window.values()) <= 4

A dialect's ``coder`` answers an agent's conversation as a model would, in one turn: an
edit that fixes examples/calculator, then ``finish`` (any later call: ``finish``).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from golem.testing import anthropic_server, openai_server
from golem.testing.wire import RecordedRequest, Reply

__all__ = ["Dialect", "Pressure", "anthropic_dialect", "openai_dialect"]

FIX = {"path": "calculator.py", "old": "    return a - b", "new": "    return a + b"}
SUMMARY = "add() adds now."


@dataclass(frozen=True)
class Dialect:
    """How one provider says its limits, refuses, falls over, and answers a coder."""

    name: str
    headers: Callable[[int, int, float, float], dict[str, str]]
    """(limit, remaining, reset instant, now) -> the rate-limit headers."""
    refused: Callable[[dict[str, str]], Reply]
    """A 429 with these headers."""
    down: Callable[[dict[str, str]], Reply]
    """An overloaded answer with these headers."""
    coder: Callable[[RecordedRequest], Reply]
    """The next turn of a coding conversation: an edit and finish."""


def _anthropic_headers(limit: int, remaining: int, reset: float, now: float) -> dict[str, str]:
    when = datetime.fromtimestamp(reset, UTC).isoformat(timespec="microseconds")
    return {
        "anthropic-ratelimit-requests-limit": str(limit),
        "anthropic-ratelimit-requests-remaining": str(remaining),
        "anthropic-ratelimit-requests-reset": when.replace("+00:00", "Z"),
    }


def _anthropic_coder(request: RecordedRequest) -> Reply:
    messages: list[dict[str, Any]] = request.json["messages"]
    answered = any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
    )
    finish = anthropic_server.ToolUse("finish", {"summary": SUMMARY}, id="toolu_finish")
    if answered:
        return anthropic_server.stream_reply(finish)
    edit = anthropic_server.ToolUse("edit", FIX, id="toolu_edit")
    return anthropic_server.stream_reply(anthropic_server.Text("Fixing add()."), edit, finish)


def anthropic_dialect() -> Dialect:
    """Anthropic's: ``anthropic-ratelimit-requests-*`` (reset as RFC 3339), 429
    ``rate_limit_error``, 529 ``overloaded_error``."""
    return Dialect(
        "anthropic",
        _anthropic_headers,
        lambda headers: anthropic_server.error_reply(
            429, "rate_limit_error", "Number of requests has exceeded your rate limit", headers
        ),
        lambda headers: anthropic_server.error_reply(
            529, "overloaded_error", "Overloaded", headers
        ),
        _anthropic_coder,
    )


def _openai_headers(limit: int, remaining: int, reset: float, now: float) -> dict[str, str]:
    return {
        "x-ratelimit-limit-requests": str(limit),
        "x-ratelimit-remaining-requests": str(remaining),
        "x-ratelimit-reset-requests": f"{math.ceil(max(reset - now, 0) * 1000)}ms",
    }


def _openai_coder(request: RecordedRequest) -> Reply:
    messages: list[dict[str, Any]] = request.json["messages"]
    finish = openai_server.ToolCall("finish", {"summary": SUMMARY}, id="call_finish")
    if any(message.get("role") == "tool" for message in messages):
        return openai_server.stream_reply(tool_calls=[finish])
    edit = openai_server.ToolCall("edit", FIX, id="call_edit")
    return openai_server.stream_reply("Fixing add().", tool_calls=[edit, finish])


def openai_dialect() -> Dialect:
    """OpenAI's: ``x-ratelimit-*-requests`` (reset as a duration), 429
    ``rate_limit_exceeded``, 503 ``server_error`` (overloaded)."""
    return Dialect(
        "openai",
        _openai_headers,
        lambda headers: openai_server.error_reply(
            429,
            "Rate limit reached for requests",
            "requests",
            "rate_limit_exceeded",
            headers=headers,
        ),
        lambda headers: openai_server.error_reply(
            503,
            "The engine is currently overloaded, please try again later",
            "server_error",
            headers=headers,
        ),
        _openai_coder,
    )


class Pressure:
    """A reply source (``server.otherwise(pressure)``) that limits, counts and can be
    taken down. Windows are ``window`` seconds long from its creation."""

    def __init__(self, dialect: Dialect, *, limit: int, window: float) -> None:
        self.dialect = dialect
        self.limit = limit
        self.window = window
        self.per_window: Counter[int] = Counter()
        """Requests received in each window (refused ones too)."""
        self.answered = 0
        """Requests answered 200."""
        self.refused = 0
        """Requests answered 429."""
        self.down = False
        """While set, every request is answered overloaded, with ``down_retry_after``."""
        self.down_retry_after = 1
        self._started = time.time()
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            now = time.time()
            window = int((now - self._started) // self.window)
            self.per_window[window] += 1
            if self.down:
                return self.dialect.down({"retry-after": str(self.down_retry_after)})
            reset = self._started + (window + 1) * self.window
            seen = self.per_window[window]
            headers = self.dialect.headers(self.limit, max(self.limit - seen, 0), reset, now)
            if seen > self.limit:
                self.refused += 1
                retry = {"retry-after": str(math.ceil(reset - now))}
                return self.dialect.refused({**headers, **retry})
            self.answered += 1
        reply = self.dialect.coder(request)
        return dataclasses.replace(reply, headers={**reply.headers, **headers})
