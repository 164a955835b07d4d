"""One model call, retried through its provider's shared limiter.

The SDKs' own retries are off (``max_retries=0``): a 429, 408, 409, 5xx or 529 reply, a
connection that fails, a stream that breaks midway (an ``event: error`` such as
Anthropic's ``overloaded_error``, an error chunk, a cut) or a request past the provider's
``timeout`` is a passing failure, which golem retries. Before every attempt the limiter
(``golem.agent.models.limiter``) says when it may go: after the provider's retry-after, a
quota's reset, or the back-off of the failures of every call of that provider and key, so
that many runs share one pace instead of each retrying on its own. A call gives up after
``max_retries`` retries, or once it would wait past ``[models] unavailable_after`` seconds
since it began; its error says when the provider expects to be back, if it said.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

from golem.agent.contracts import WaitSink
from golem.agent.messages import ModelResponse
from golem.agent.models.failures import (
    Endpoint,
    error_fields,
    failure_kind,
    held_back,
    model_error,
    stream_broken,
    timed_out,
    unreachable,
)
from golem.agent.models.limiter import Hold, Permit, ProviderLimiter
from golem.agent.models.rate_headers import read_rate_headers
from golem.core.errors import ModelUnavailable
from golem.core.model_config import ProviderConfig

__all__ = ["Answered", "CallBounds", "SdkErrors", "streamed_call"]

C = TypeVar("C")
Answered = Callable[[Mapping[str, str]], Awaitable[None]]
"""Called by a provider's stream once its answer's headers came (before its body)."""


@dataclass(frozen=True)
class SdkErrors:
    """One SDK's exception classes that golem translates into ModelErrors."""

    status: type[Exception]
    """An error status (has ``status_code``, ``response`` and ``body``); Anthropic's SDK
    raises it for an error event inside a stream too, with the stream's status 200."""
    connection: type[Exception]
    """No connection."""
    other: type[Exception] | None = None
    """Any other error of the SDK (has ``body`` and ``message``), e.g. an error chunk."""


@dataclass(frozen=True)
class CallBounds:
    """How long one call keeps trying: ``max_retries`` retries, and no wait past
    ``unavailable_after`` seconds since it began."""

    max_retries: int
    unavailable_after: float
    timeout: float
    """Seconds one request may take."""

    @classmethod
    def of(cls, provider: ProviderConfig, unavailable_after: float) -> CallBounds:
        """The bounds of a provider's calls."""
        return cls(provider.max_retries, unavailable_after, provider.timeout)


async def streamed_call(
    endpoint: Endpoint,
    bounds: CallBounds,
    limiter: ProviderLimiter,
    open_client: Callable[[], AbstractAsyncContextManager[C]],
    stream: Callable[[C, Answered], Awaitable[ModelResponse]],
    *,
    errors: SdkErrors,
    on_wait: WaitSink | None = None,
) -> ModelResponse:
    """One model call for either provider: a client of its own, each attempt let through
    by the limiter and cut at the provider's timeout, passing failures retried, every SDK
    failure translated."""
    began = time.time()
    retries = 0
    async with open_client() as client:
        while True:
            decision = await limiter.admit(on_wait, give_up_at=began + bounds.unavailable_after)
            if isinstance(decision, Hold):
                back_at = decision.until if decision.header else None
                raise held_back(endpoint, decision.reason, decision.until, back_at)
            try:
                response = await _attempt(bounds, limiter, decision, lambda: client, stream)
            except Exception as exc:
                passing = _passing(exc, errors)
                if passing is None:
                    await limiter.release(decision)
                    raise _translated(endpoint, exc, errors, bounds) from exc
                hold = await limiter.failed(
                    decision, read_rate_headers(passing, time.time()), _what(exc, errors, bounds)
                )
                retries += 1
                if retries > bounds.max_retries or hold.until > began + bounds.unavailable_after:
                    spent = time.time() - began
                    tried = f"still failing after {retries - 1} retries in {spent:.0f}s"
                    back_at = hold.until if hold.header else None
                    raise _translated(endpoint, exc, errors, bounds, tried, back_at) from exc
            except BaseException:  # cancelled: others need not wait for its lease to end
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(limiter.release(decision))
                raise
            else:
                limiter.forget(decision)
                return response


async def _attempt(
    bounds: CallBounds,
    limiter: ProviderLimiter,
    permit: Permit,
    client: Callable[[], C],
    stream: Callable[[C, Answered], Awaitable[ModelResponse]],
) -> ModelResponse:
    async def answered(headers: Mapping[str, str]) -> None:
        await limiter.answered(permit, read_rate_headers(headers, time.time()))

    async with asyncio.timeout(bounds.timeout):
        return await stream(client(), answered)


def _passing(exc: Exception, errors: SdkErrors) -> Mapping[str, str] | None:
    """The headers of a passing failure (empty when it had none), or None when ``exc``
    is not one: a 429, 408, 409, 5xx or 529 reply (unless it says ``x-should-retry:
    false``), an error event of a passing type inside a stream, no connection, a stream
    cut, a request past the timeout."""
    if isinstance(exc, TimeoutError | ModelUnavailable | errors.connection):
        return {}
    if isinstance(exc, errors.status):
        headers = _headers(exc)
        should = headers.get("x-should-retry")
        status = getattr(exc, "status_code", None)
        kind = failure_kind(status, getattr(exc, "type", None) or _body_type(exc))
        if should == "false" or (should != "true" and kind not in _PASSING):
            return None
        return headers
    if errors.other is not None and isinstance(exc, errors.other):
        return {} if failure_kind(None, _body_type(exc)) in _PASSING else None
    return None


_PASSING = ("rate_limited", "unavailable")


def _headers(exc: Exception) -> dict[str, str]:
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}


def _body_type(exc: Exception) -> str | None:
    body: Any = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def _what(exc: Exception, errors: SdkErrors, bounds: CallBounds) -> str:
    """A passing failure in a few words, for the limiter's reason."""
    if isinstance(exc, TimeoutError):
        return f"no complete reply within {bounds.timeout:g}s"
    if isinstance(exc, ModelUnavailable):
        return exc.message
    if isinstance(exc, errors.connection):
        return f"could not connect ({exc})"
    status = getattr(exc, "status_code", None)
    kind, message = error_fields(getattr(exc, "body", None))
    kind = getattr(exc, "type", None) or kind or "error"
    code = f"{status} {kind}" if isinstance(status, int) and status >= 400 else kind
    return f"the provider answered {code}: {message}"


def _translated(
    endpoint: Endpoint,
    exc: Exception,
    errors: SdkErrors,
    bounds: CallBounds,
    tried: str = "not retried",
    back_at: float | None = None,
) -> Exception:
    if isinstance(exc, TimeoutError):
        return timed_out(endpoint, bounds.timeout, tried=tried, back_at=back_at)
    if isinstance(exc, ModelUnavailable):
        return stream_broken(endpoint, exc.message, tried=tried, back_at=back_at)
    if isinstance(exc, errors.status):
        status, body = getattr(exc, "status_code", None), getattr(exc, "body", None)
        return model_error(endpoint, status, body, tried=tried, back_at=back_at)
    if isinstance(exc, errors.connection):
        return unreachable(endpoint, exc, tried=tried, back_at=back_at)
    if errors.other is not None and isinstance(exc, errors.other):
        body = getattr(exc, "body", None) or getattr(exc, "message", str(exc))
        return model_error(endpoint, None, body, tried=tried, back_at=back_at)
    return exc
