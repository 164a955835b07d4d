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
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TypeVar

from golem.agent.messages import ModelResponse
from golem.agent.models.failures import (
    Endpoint,
    model_error,
    stream_broken,
    timed_out,
    unreachable,
)
from golem.core.errors import ModelUnavailable
from golem.core.model_config import ProviderConfig

__all__ = ["SdkErrors", "backoff_delay", "retry_broken_streams", "streamed_call"]

T = TypeVar("T")
C = TypeVar("C")

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


@dataclass(frozen=True)
class SdkErrors:
    """One SDK's exception classes that golem translates into ModelErrors."""

    status: type[Exception]
    """An error status (has ``status_code`` and ``body``)."""
    connection: type[Exception]
    """No connection after the SDK's own retries."""
    other: type[Exception] | None = None
    """Any other error of the SDK (has ``body`` and ``message``), e.g. an error chunk."""


async def streamed_call(
    endpoint: Endpoint,
    provider: ProviderConfig,
    open_client: Callable[[], AbstractAsyncContextManager[C]],
    stream: Callable[[C], Awaitable[ModelResponse]],
    *,
    errors: SdkErrors,
    is_transient: Callable[[Exception], bool],
) -> ModelResponse:
    """One model call for either provider: a client of its own, broken streams retried,
    the whole call cut at the provider's timeout, every SDK failure translated."""
    try:
        async with asyncio.timeout(provider.timeout), open_client() as client:
            return await retry_broken_streams(
                lambda: stream(client), max_retries=provider.max_retries, is_transient=is_transient
            )
    except TimeoutError as exc:
        raise timed_out(endpoint, provider.timeout) from exc
    except ModelUnavailable as exc:
        raise stream_broken(endpoint, exc.message) from exc
    except Exception as exc:
        raise _translated(endpoint, exc, errors) from exc


def _translated(endpoint: Endpoint, exc: Exception, errors: SdkErrors) -> Exception:
    if isinstance(exc, errors.status):
        return model_error(endpoint, getattr(exc, "status_code", None), getattr(exc, "body", None))
    if isinstance(exc, errors.connection):
        return unreachable(endpoint, exc)
    if errors.other is not None and isinstance(exc, errors.other):
        body = getattr(exc, "body", None) or getattr(exc, "message", str(exc))
        return model_error(endpoint, None, body)
    return exc
