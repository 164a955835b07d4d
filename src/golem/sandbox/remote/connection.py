"""A golem server's API as one key reaches it: requests, downloads, server-sent events and
WebSocket addresses, every problem answer raised as the GolemError it was on the server (by
the problem's ``kind``), with the server's message.

``RemoteEngine`` and its boxes and calls all go through one ``ServerConnection``: a
transport that handles what the HTTP and WebSocket answers mean (a cluster node's, which
turns a lost node's errors into ``NodeLost``) wraps it, not the engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse

from golem.core import errors as golem_errors
from golem.core.errors import GolemError, RemoteError
from golem.sandbox.remote.frames import ProblemFrame

__all__ = ["ServerConnection", "error_of", "raise_for_problem"]


def error_of(problem: ProblemFrame) -> GolemError:
    """The GolemError a problem was on the server (by its ``kind``), else a RemoteError."""
    kind = getattr(golem_errors, problem.kind or "", None)
    if isinstance(kind, type) and issubclass(kind, GolemError) and kind is not GolemError:
        try:
            error: GolemError = kind(problem.detail)
        except TypeError:
            return RemoteError(problem.status, problem.detail)
        return error
    return RemoteError(problem.status, f"the server answered {problem.status}: {problem.detail}")


def raise_for_problem(response: httpx.Response) -> None:
    """Turn a problem-details answer into the GolemError it was on the server."""
    if response.is_success:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    detail = str(body.get("detail") or response.text or response.reason_phrase)
    kind = body.get("kind")
    raise error_of(
        ProblemFrame(status=response.status_code, kind=str(kind) if kind else None, detail=detail)
    )


class ServerConnection:
    """One async HTTP client on a golem server, with a key."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        timeout: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._key = key
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {key}"},
            timeout=timeout,
            transport=transport,
        )

    @property
    def key(self) -> str:
        """The API key (for the WebSocket handshakes)."""
        return self._key

    def error_of(self, problem: ProblemFrame) -> GolemError:
        """The error a problem answer stands for (a call channel's, a stream's)."""
        return error_of(problem)

    def unreachable(self, exc: Exception) -> GolemError:
        """The error of a request that reached no server."""
        return RemoteError(503, f"cannot reach the golem server at {self.url}: {exc}")

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One API request; a problem answer raises."""
        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from exc
        raise_for_problem(response)
        return response

    async def download(self, path: str, params: dict[str, Any]) -> AsyncIterator[bytes]:
        """GET ``path``; its body in chunks as they arrive (a problem answer raises)."""
        try:
            async with self._http.stream("GET", path, params=params) as response:
                if not response.is_success:
                    await response.aread()
                    raise_for_problem(response)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from exc

    async def sse(self, path: str, body: Any) -> AsyncIterator[tuple[str, str]]:
        """POST ``body``, then the server-sent events that answer it (name, data)."""
        async for message in self._events("POST", path, json=body):
            yield message.event, message.data

    async def follow(self, path: str, *, after: int = 0) -> AsyncIterator[ServerSentEvent]:
        """GET a stream of server-sent events from the one after event ``after`` on (its
        ``Last-Event-ID``); an ``event: problem`` ending it raises its GolemError."""
        headers = {"Last-Event-ID": str(after)} if after else {}
        async for message in self._events("GET", path, headers=headers):
            if message.event == "problem":
                raise error_of(ProblemFrame.model_validate_json(message.data))
            yield message

    async def _events(
        self, method: str, path: str, **kwargs: Any
    ) -> AsyncIterator[ServerSentEvent]:
        try:
            async with aconnect_sse(self._http, method, path, **kwargs) as source:
                if not source.response.is_success:
                    await source.response.aread()
                    raise_for_problem(source.response)
                async for message in source.aiter_sse():
                    yield message
        except httpx.HTTPError as exc:
            raise self.unreachable(exc) from exc

    def websocket_url(self, path: str) -> str:
        """The ws:// (or wss://) URL of an API path."""
        return self.url.replace("http", "ws", 1) + path

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._http.aclose()
