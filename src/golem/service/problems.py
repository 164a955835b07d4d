"""Errors as the API answers them: RFC 9457 problem details, with golem's own statuses."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.requests import ClientDisconnect

from golem.core.errors import GolemError, NameRefused

__all__ = [
    "ERROR_RESPONSES",
    "ProblemDetails",
    "install_problem_handlers",
    "problem",
    "problem_of",
]

PROBLEM_TYPE = "application/problem+json"
log = logging.getLogger("golem.service")


class ProblemDetails(BaseModel):
    """An error as the API answers it (RFC 9457), with golem's ``kind`` of error."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str = Field(description="What went wrong and what to do about it.")
    kind: str | None = Field(None, description="golem's error class, e.g. PolicyViolation.")
    errors: list[dict[str, str]] | None = Field(
        None, description="Each bad field of a request that failed validation."
    )


def _documented(status: int, description: str) -> dict[str, Any]:
    schema = {"$ref": "#/components/schemas/ProblemDetails"}
    return {
        "model": ProblemDetails,
        "description": description,
        "content": {PROBLEM_TYPE: {"schema": schema}},
    }


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _documented(400, "The request cannot be read."),
    401: _documented(401, "No API key, or one that is not valid."),
    403: _documented(403, "The key's role or the server's policy does not allow it."),
    404: _documented(404, "No such object for this tenant."),
    409: _documented(409, "The object is not in a state that allows it."),
    410: _documented(
        410, "The session's box ended by itself (reaped, killed, lost): start a new session."
    ),
    413: _documented(
        413,
        "The request's body is too large for the key's role "
        "(server.policies.<role>.max_body_bytes, or max_upload_bytes for an upload), "
        "or the box's file system has no room left for an upload.",
    ),
    415: _documented(415, "The request's content type is not the one expected."),
    422: _documented(422, "The request is not valid; each bad field is named."),
    424: _documented(424, "A box's setup failed."),
    429: _documented(429, "The server or tenant is at capacity: retry after Retry-After."),
    500: _documented(500, "golem failed."),
    502: _documented(502, "Something golem depends on answered badly."),
    503: _documented(503, "Something golem depends on is unavailable."),
    504: _documented(504, "A call timed out."),
}
"""Every error the API can answer, documented on every route (problem details)."""


def problem(status: int, title: str, detail: str, **extra: object) -> JSONResponse:
    """A problem-details response."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE)


def problem_of(exc: GolemError) -> JSONResponse:
    """A GolemError's problem: its status, its message, its kind and its headers."""
    status = exc.http_status
    extra: dict[str, object] = {}
    if isinstance(exc, NameRefused):
        extra["errors"] = [{"field": exc.field, "problem": exc.problem}]
    title = _TITLES.get(status, "Error")
    response = problem(status, title, exc.message, kind=type(exc).__name__, **extra)
    for name, value in getattr(exc, "headers", {}).items():
        response.headers[name] = value
    return response


_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    410: "Gone",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    424: "Failed Dependency",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def install_problem_handlers(app: FastAPI) -> None:
    """GolemErrors become problems with their own status; request validation errors name
    each bad field."""

    @app.exception_handler(GolemError)
    async def golem_error(_request: Request, exc: GolemError) -> JSONResponse:
        return problem_of(exc)

    @app.exception_handler(ClientDisconnect)
    async def client_left(_request: Request, _exc: ClientDisconnect) -> JSONResponse:
        # Nobody hears the answer; the route has ended what it started (an upload lands
        # whole or not at all), and the body's reader has logged the client's leaving.
        return problem(400, _TITLES[400], "the client left before its request was whole")

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error", exc_info=exc)
        detail = f"golem failed ({type(exc).__name__}); the server's log has the details"
        return problem(500, _TITLES[500], detail, kind="InternalError")

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {"field": ".".join(str(p) for p in e["loc"]), "problem": e["msg"]} for e in exc.errors()
        ]
        detail = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
        return problem(422, _TITLES[422], detail, errors=fields)
