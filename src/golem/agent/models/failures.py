"""Provider failures as golem errors: which ones are worth a retry, and what to say.

Both SDKs report an HTTP status and an error body; an error event inside a stream that
began with 200 carries only the body's error type. Either way the user gets a ModelError
that names the model and says what to do next.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from golem.core.ansi import plain
from golem.core.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelRequestRejected,
    ModelUnavailable,
)

__all__ = [
    "Endpoint",
    "FailureKind",
    "error_fields",
    "failure_kind",
    "held_back",
    "model_error",
    "stream_broken",
    "timed_out",
    "unreachable",
]

FailureKind = Literal["rate_limited", "unavailable", "auth", "rejected"]

LONGEST_TYPE, LONGEST_MESSAGE = 64, 500  # characters of a provider's error kept
_AUTH_TYPES = frozenset({"authentication_error", "permission_error", "invalid_api_key"})
_REJECTED_TYPES = frozenset(
    {"invalid_request_error", "not_found_error", "request_too_large", "invalid_request"}
)


@dataclass(frozen=True)
class Endpoint:
    """The provider a model string reaches, as error messages name it."""

    model: str
    """The model string, e.g. ``anthropic/claude-opus-4-5``."""
    section: str
    """Its golem.toml section, e.g. ``models.anthropic``."""
    key_env: str
    """The environment variable its API key comes from."""
    base_url: str


def failure_kind(status: int | None, error_type: str | None) -> FailureKind:
    """Classify a failure by HTTP status, or, inside a stream that began with 200, by the
    error type of the error event. Rate limits and unavailability are transient."""
    if status is not None and status >= 400:
        return _status_kind(status)
    return _type_kind(error_type or "")


def _status_kind(status: int) -> FailureKind:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    return "unavailable" if status >= 500 or status in (408, 409) else "rejected"


def _type_kind(error_type: str) -> FailureKind:
    if "rate_limit" in error_type:
        return "rate_limited"
    if error_type in _AUTH_TYPES:
        return "auth"
    return "rejected" if error_type in _REJECTED_TYPES else "unavailable"


def model_error(
    endpoint: Endpoint,
    status: int | None,
    body: object,
    *,
    tried: str = "",
    back_at: float | None = None,
) -> ModelError:
    """The golem error for a provider's error reply (``status`` None or < 400: an error
    event inside a stream); ``tried`` says what golem tried first (``still failing after 3
    retries in 12s``), ``back_at`` when the provider expects to be back (passing failures
    only)."""
    error_type, detail = error_fields(body)
    kind = failure_kind(status, error_type)
    code = str(status) if status is not None and status >= 400 else error_type or "error"
    where = f"{endpoint.model}: the provider answered {code}: {detail}"
    if kind == "rate_limited":
        return ModelRateLimited(
            f"{where} ({tried or 'rate limited'}). Wait and run again, run fewer agents "
            f"at once, or raise max_retries under [{endpoint.section}] or unavailable_after "
            "under [models] in golem.toml.",
            back_at=back_at,
        )
    if kind == "unavailable":
        return ModelUnavailable(
            f"{where} ({tried or 'failing'}). The provider is down or overloaded: try "
            "again later, or choose another model.",
            back_at=back_at,
        )
    if kind == "auth":
        return ModelAuthError(
            f"{where}. The API key in ${endpoint.key_env} was refused: check that it is "
            "current and allowed to use this model."
        )
    return ModelRequestRejected(
        f"{where}. The provider refused the request itself: check the model name "
        f"({endpoint.model}); if it is right, the conversation may be too long for it."
    )


def unreachable(
    endpoint: Endpoint, exc: BaseException, *, tried: str = "", back_at: float | None = None
) -> ModelUnavailable:
    """The error for a provider that could not be reached (connection, timeout): ``exc``
    is the SDK's error, whose cause says what went wrong."""
    detail = str(exc) if exc.__cause__ is None else f"{exc} {exc.__cause__!r}"
    return ModelUnavailable(
        f"{endpoint.model}: cannot reach {endpoint.base_url} ({detail}; {tried}). Check "
        f"the network, and base_url under [{endpoint.section}] in golem.toml.",
        back_at=back_at,
    )


def stream_broken(
    endpoint: Endpoint, detail: str, *, tried: str = "", back_at: float | None = None
) -> ModelUnavailable:
    """The error for a reply whose stream kept breaking off midway."""
    return ModelUnavailable(
        f"{endpoint.model}: the connection to {endpoint.base_url} broke off mid-reply "
        f"({detail}; {tried}). Try again later; if it persists, look for a proxy that "
        "cuts long responses.",
        back_at=back_at,
    )


def timed_out(
    endpoint: Endpoint, seconds: float, *, tried: str = "", back_at: float | None = None
) -> ModelUnavailable:
    """The error for a request that took longer than the provider's ``timeout``."""
    return ModelUnavailable(
        f"{endpoint.model}: no complete reply within {seconds:g} s ({tried}). Try again "
        f"later, or raise timeout under [{endpoint.section}] in golem.toml.",
        back_at=back_at,
    )


def held_back(endpoint: Endpoint, reason: str, until: float, back_at: float | None) -> ModelError:
    """The error for a call the provider's limiter would hold past the call's bound."""
    return ModelRateLimited(
        f"{endpoint.model}: calls to {endpoint.base_url} are held until "
        f"{time.strftime('%H:%M:%S', time.localtime(until))} ({reason}), past "
        "[models] unavailable_after. Wait and run again, or run fewer agents at once.",
        back_at=back_at,
    )


def error_fields(body: object) -> tuple[str | None, str]:
    """(error type, message) from an error body: Anthropic's ``{"type": "error", "error":
    {...}}``, OpenAI's ``{"error": {...}}`` or its inner object, or plain text. The
    provider's words reach terminals, events and a paused run's reason: they come without
    escape sequences or control characters, and at most 500 characters."""
    error: Any = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        said = plain(message)[:LONGEST_MESSAGE] if isinstance(message, str) else ""
        return (plain(kind)[:LONGEST_TYPE] if isinstance(kind, str) else None, said or "no message")
    text = plain(str(error)).strip() if error is not None else ""
    return None, text[:LONGEST_MESSAGE] or "no message"
