"""GitLab's REST API v4 over httpx: retries, pagination, bounded log tails, and GitLab's
errors as ForgeErrors.

Retried: 502/503/504 and network errors (with doubling backoff), and 429 whose wait
(``Retry-After``, or ``RateLimit-Reset``) is at most ``max_wait``. Everything else becomes
the fitting ``ForgeError`` at once, with GitLab's own message (``{"message": ...}`` as a
string, a list or a dict of fields; or ``{"error": ..., "error_description": ...}``) and
what to do next. The token is asked of its ``TokenSource`` for each request and sent to
the API's origin only (``PRIVATE-TOKEN`` for an access token, ``Authorization: Bearer``
for an OAuth one); pagination links elsewhere are refused. A 401 is answered once with a
refreshed token, where the source can refresh it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import httpx

from golem.core.ansi import clean
from golem.core.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeRequestRejected,
    ForgeUnavailable,
    PullRequestExists,
)
from golem.forge.config import GitLabConfig
from golem.forge.rest import (
    MAX_DOWNLOAD,
    Download,
    Params,
    RestAPI,
    checked_path,
    read_tail,
    retry_after,
)
from golem.forge.tokens import StaticToken

__all__ = ["GitLabAPI", "GitLabReply", "project_id"]

GitLabReply = Any
"""A decoded JSON reply of GitLab's API."""


def project_id(project: str) -> str:
    """A project's id in API paths: its URL-encoded path (``group%2Fsub%2Fproject``)."""
    return quote(project, safe="")


class GitLabAPI(RestAPI[GitLabConfig]):
    """A client of one GitLab instance's API (gitlab.com's, or a self-managed one's)."""

    forge = "GitLab"
    setting = "forge.gitlab.base_url"
    headers: ClassVar[dict[str, str]] = {"Accept": "application/json"}

    @staticmethod
    def rate_limit_wait(response: httpx.Response) -> float | None:
        """Seconds a 429 asks to wait (``Retry-After``, else until ``RateLimit-Reset``; 60
        when it names neither); None for any other answer."""
        if response.status_code != 429:
            return None
        asked = retry_after(response)
        if asked is not None:
            return asked
        try:
            return max(0.0, float(response.headers["ratelimit-reset"]) - time.time())
        except (KeyError, ValueError):
            return 60.0

    def auth_headers(self, token: str) -> dict[str, str]:
        """An access token as ``PRIVATE-TOKEN``, an OAuth one as ``Authorization: Bearer``."""
        if isinstance(self._tokens, StaticToken):
            return {"PRIVATE-TOKEN": token}
        return super().auth_headers(token)

    async def tail(
        self, path: str, what: str, *, limit: int, max_read: int = MAX_DOWNLOAD
    ) -> Download:
        """The last ``limit`` bytes of a (possibly huge) plain-text reply, streamed; reading
        stops after ``max_read`` bytes (then it is not the real end: ``complete`` False)."""
        async with self._client() as client:
            response = await self._send(client, "GET", path, what)
            try:
                return await read_tail(response, limit, max_read)
            finally:
                await response.aclose()

    def _next_page(self, response: httpx.Response) -> httpx.URL | None:
        link = response.links.get("next", {}).get("url")
        if link is not None:
            return httpx.URL(self._same_origin(link))
        following = response.headers.get("x-next-page", "").strip()
        if following.isdigit():
            return response.request.url.copy_set_param("page", following)
        return None

    async def _send(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: str | httpx.URL,
        what: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Params | None = None,
    ) -> httpx.Response:
        """The response, its body not read yet (the caller reads or streams it)."""
        if isinstance(url, str) and url.startswith("/"):
            checked_path(url, "GitLab")

        async def send(headers: dict[str, str]) -> httpx.Response:
            request = client.build_request(method, url, json=json, params=params, headers=headers)
            return await client.send(request, stream=True)

        return await self._authorised(what, send)

    def error(self, response: httpx.Response, what: str) -> ForgeError:
        """The ForgeError for GitLab's error ``response`` to a request about ``what``."""
        status = response.status_code
        detail = gitlab_detail(response)
        said = f"GitLab said {status}: {detail}"
        if status in (401, 403, 429):
            return self._access_error(status, what, said)
        if status == 404:
            return ForgeNotFound(
                f"GitLab has no {what} ({said}), or the token ({self.token_source}) cannot "
                "see it (private projects answer 404): check the path and the token's access"
            )
        if status == 409 and "already exists" in detail.lower():
            return PullRequestExists(
                f"{what}: a merge request for this branch is already open ({said}); update "
                "it, or push to a new branch"
            )
        if status >= 500:
            return ForgeUnavailable(f"GitLab failed {what} ({said}) after retries; try later")
        return ForgeRequestRejected(f"GitLab refused {what} ({said})")

    def _access_error(self, status: int, what: str, said: str) -> ForgeError:
        env = self.token_source
        if status == 401:
            return self._token_refused(what, said)
        if status == 429:
            return ForgeRateLimited(
                f"GitLab's rate limit stopped {what} ({said}); wait, or raise forge.gitlab.max_wait"
            )
        return ForgeAuthError(
            f"GitLab refused {what} ({said}): the token ({env}) lacks a scope or role it "
            "needs (scope api; at least Developer in the project)"
        )


def gitlab_detail(response: httpx.Response) -> str:
    """GitLab's error body as one line: ``message`` (a string, list, or dict of field
    errors), or OAuth's ``error`` and ``error_description``; cleaned (a forge's text,
    ``golem.core.ansi.clean``)."""
    return clean(_detail(response), multiline=False)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if not isinstance(body, dict):
        return str(body)[:300]
    if "message" in body:
        return _flatten(body["message"]) or response.reason_phrase
    if "error" in body:
        parts = [_flatten(body["error"]), _flatten(body.get("error_description"))]
        return ": ".join(part for part in parts if part)
    return str(body)[:300]


def _flatten(message: Any) -> str:
    if message is None:
        return ""
    if isinstance(message, dict):
        return "; ".join(f"{key} {_flatten(value)}" for key, value in message.items())
    if isinstance(message, list):
        return "; ".join(_flatten(item) for item in message)
    return str(message)
