"""golem's own retries, for what the SDKs cannot retry: a stream that failed midway.

The SDKs retry a request whose reply is an error status (429, 5xx, 529) or that could not
connect, honouring Retry-After and retry-after-ms; ``max_retries`` from ProviderConfig
goes to them. Once a stream has begun with 200, an error event inside it (Anthropic's
``overloaded_error``) or a dropped connection reaches the caller instead: those are
retried here, with the same exponential backoff the SDKs use.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["backoff_delay", "retry_broken_streams"]

T = TypeVar("T")

INITIAL_DELAY = 0.5
MAX_DELAY = 8.0


def backoff_delay(retry: int) -> float:
    """Seconds to wait before retry number ``retry`` (0 first): doubling from 0.5 s up to
    8 s, less up to a quarter at random so that many agents do not retry in step."""
    delay = min(INITIAL_DELAY * 2.0**retry, MAX_DELAY)
    return delay * (1 - 0.25 * random.random())  # noqa: S311 (jitter, not a secret)


async def retry_broken_streams(
    attempt: Callable[[], Awaitable[T]],
    *,
    max_retries: int,
    is_transient: Callable[[Exception], bool],
) -> T:
    """Run ``attempt`` again, up to ``max_retries`` times, while it fails with an error that
    ``is_transient`` accepts; any other error, or the last one, propagates."""
    retry = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            if retry >= max_retries or not is_transient(exc):
                raise
        await asyncio.sleep(backoff_delay(retry))
        retry += 1
