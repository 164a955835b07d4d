"""Provider failures as golem errors: which ones are worth a retry, and what to say.

Both SDKs report an HTTP status and an error body; an error event inside a stream that
began with 200 carries only the body's error type. Either way the user gets a ModelError
that names the model and says what to do next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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
    "failure_kind",
    "model_error",
    "stream_broken",
    "timed_out",
    "unreachable",
]

FailureKind = Literal["rate_limited", "unavailable", "auth", "rejected"]

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
    max_retries: int


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


def model_error(endpoint: Endpoint, status: int | None, body: object) -> ModelError:
    """The golem error for a provider's error reply (``status`` None or < 400: an error
    event inside a stream), after the SDK and golem have retried what they could."""
    error_type, detail = _error_fields(body)
    kind = failure_kind(status, error_type)
    code = str(status) if status is not None and status >= 400 else error_type or "error"
    where = f"{endpoint.model}: the provider answered {code}: {detail}"
    if kind == "rate_limited":
        return ModelRateLimited(
            f"{where} (still rate limited after {endpoint.max_retries} retries). Wait a "
            "minute and run again, run fewer agents at once, or raise max_retries under "
            f"[{endpoint.section}] in golem.toml."
        )
    if kind == "unavailable":
        return ModelUnavailable(
            f"{where} (still failing after {endpoint.max_retries} retries). The provider "
            "is down or overloaded: try again later, or choose another model."
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


def unreachable(endpoint: Endpoint, exc: BaseException) -> ModelUnavailable:
    """The error for a provider that could not be reached (connection, timeout): ``exc``
    is the SDK's error, whose cause says what went wrong."""
    detail = str(exc) if exc.__cause__ is None else f"{exc} {exc.__cause__!r}"
    return ModelUnavailable(
        f"{endpoint.model}: cannot reach {endpoint.base_url} ({detail}; tried "
        f"{endpoint.max_retries + 1} times). Check the network, and base_url under "
        f"[{endpoint.section}] in golem.toml."
    )


def stream_broken(endpoint: Endpoint, detail: str) -> ModelUnavailable:
    """The error for a reply whose stream kept breaking off midway."""
    return ModelUnavailable(
        f"{endpoint.model}: the connection to {endpoint.base_url} broke off mid-reply "
        f"({detail}; tried {endpoint.max_retries + 1} times). Try again later; if it "
        "persists, look for a proxy that cuts long responses."
    )


def timed_out(endpoint: Endpoint, seconds: float) -> ModelUnavailable:
    """The error for a call that took longer than the provider's ``timeout``."""
    return ModelUnavailable(
        f"{endpoint.model}: no complete reply within {seconds:g} s (retries included). "
        f"Try again later, or raise timeout under [{endpoint.section}] in golem.toml."
    )


def _error_fields(body: object) -> tuple[str | None, str]:
    """(error type, message) from an error body: Anthropic's ``{"type": "error", "error":
    {...}}``, OpenAI's ``{"error": {...}}`` or its inner object, or plain text."""
    error: Any = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message")
        return (
            kind if isinstance(kind, str) else None,
            message if isinstance(message, str) and message else "no message",
        )
    text = str(error).strip() if error is not None else ""
    return None, text[:500] or "no message"
