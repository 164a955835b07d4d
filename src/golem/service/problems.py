"""Errors as the API answers them: RFC 9457 problem details, with golem's own statuses."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from golem.core.errors import GolemError

__all__ = ["Problem", "install_problem_handlers", "problem"]

PROBLEM_TYPE = "application/problem+json"


class Problem(GolemError):
    """An error the API itself raises, with its status (401, 404, 429, ...)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.http_status = status
        self.headers = headers or {}


def problem(status: int, title: str, detail: str, **extra: object) -> JSONResponse:
    """A problem-details response."""
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_TYPE)


_TITLES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    409: "Conflict", 422: "Unprocessable Content", 424: "Failed Dependency",
    429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout",
}  # fmt: skip


def install_problem_handlers(app: FastAPI) -> None:
    """GolemErrors become problems with their own status; request validation errors name
    each bad field."""

    @app.exception_handler(GolemError)
    async def golem_error(_request: Request, exc: GolemError) -> JSONResponse:
        status = exc.http_status
        response = problem(
            status, _TITLES.get(status, "Error"), exc.message, kind=type(exc).__name__
        )
        for name, value in getattr(exc, "headers", {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = [
            {"field": ".".join(str(p) for p in e["loc"]), "problem": e["msg"]} for e in exc.errors()
        ]
        detail = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
        return problem(422, _TITLES[422], detail, errors=fields)
