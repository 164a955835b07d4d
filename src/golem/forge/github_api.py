"""GitHub's REST API over httpx: retries, pagination, and GitHub's errors as ForgeErrors.

Retried: 502/503/504 and network errors (with doubling backoff), and rate limits whose
wait (``Retry-After``, or ``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0) is at
most ``max_wait``. Everything else becomes the fitting ``ForgeError`` at once, with
GitHub's own message and what to do next. The token is asked of its ``TokenSource`` for
each request (a GitHub App's are minted per use) and sent as ``Authorization: Bearer`` to
the API's origin only; pagination links elsewhere are refused. A 401 is answered once with
a fresh token, where the source can mint one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, ClassVar

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
from golem.forge.config import GitHubConfig
from golem.forge.rest import (
    MAX_DOWNLOAD,
    Download,
    Params,
    RestAPI,
    checked_path,
    decoded,
    read_tail,
    retry_after,
)

__all__ = [
    "API_VERSION",
    "Download",
    "GitHubAPI",
    "GitHubReply",
    "github_detail",
    "repo_of_path",
    "retried_wait",
]

API_VERSION = "2022-11-28"
GitHubReply = Any
"""A decoded JSON reply of GitHub's API."""
REPO_PATH = re.compile(r"^/repos/(?P<owner>[^/?#]+)/(?P<name>[^/?#]+)")


def repo_of_path(path: str) -> str | None:
    """``owner/name`` of an API path under ``/repos/{owner}/{name}``, else None."""
    found = REPO_PATH.match(path.split("?", 1)[0])
    return f"{found['owner']}/{found['name']}" if found else None


class GitHubAPI(RestAPI[GitHubConfig]):
    """A client of one GitHub API (github.com's, or a GitHub Enterprise server's)."""

    forge = "GitHub"
    setting = "forge.github.api_url"
    headers: ClassVar[dict[str, str]] = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
    }

    @staticmethod
    def rate_limit_wait(response: httpx.Response) -> float | None:
        return retried_wait(response)

    async def download_tail(
        self, path: str, what: str, *, limit: int, max_read: int = MAX_DOWNLOAD
    ) -> Download:
        """The last ``limit`` bytes of a download (a job's log) that the API answers with a
        redirect to a pre-signed URL on another origin: that URL is fetched without the
        token, streamed, and only its tail kept; reading stops after ``max_read`` bytes."""
        async with self._client() as client:
            response = await self._send(client, "GET", path, what, follow_redirects=False)
        if not response.is_redirect:
            return Download(response.content[-limit:], complete=True)
        location = response.url.join(response.headers["location"])
        # A pre-signed URL carries its own authority: the token never leaves the API's origin.
        async with httpx.AsyncClient(
            headers={"User-Agent": "golem"},
            timeout=self.config.timeout,
            transport=self._transport,
            follow_redirects=True,
        ) as plain:
            try:
                return await _stream_tail(plain, location, what, limit, max_read)
            except httpx.TransportError as exc:
                raise ForgeUnavailable(
                    f"cannot download {what} from {location.host} ({type(exc).__name__}: "
                    f"{exc}); try later"
                ) from exc

    async def graphql(self, query: str, variables: Mapping[str, Any], what: str) -> GitHubReply:
        """The ``data`` of a GraphQL query (errors it reports are a ForgeError)."""
        async with self._client() as client:
            response = await self._send(
                client,
                "POST",
                self.graphql_url,
                what,
                json={"query": query, "variables": variables},
            )
        body = decoded(response)
        if body.get("errors"):
            messages = "; ".join(str(e.get("message")) for e in body["errors"])
            raise ForgeRequestRejected(f"GitHub's GraphQL API refused {what}: {messages}")
        return body.get("data")

    @property
    def graphql_url(self) -> str:
        """``https://api.github.com/graphql``; a GitHub Enterprise server's
        ``https://HOST/api/graphql`` (its REST API being ``https://HOST/api/v3``)."""
        base = self.config.api_url.rstrip("/")
        if base.endswith("/api/v3"):
            return base.removesuffix("/v3") + "/graphql"
        return base + "/graphql"

    def _next_page(self, response: httpx.Response) -> str | None:
        link = response.links.get("next", {}).get("url")
        return None if link is None else self._same_origin(link)

    async def _send(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: str | httpx.URL,
        what: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Params | None = None,
        follow_redirects: bool = True,
    ) -> httpx.Response:
        if isinstance(url, str) and url.startswith("/"):
            checked_path(url, "GitHub")
        repo = repo_of_path(self._api_path(str(url)))

        async def send(headers: dict[str, str]) -> httpx.Response:
            return await client.request(
                method,
                url,
                json=json,
                params=params,
                headers=headers,
                follow_redirects=follow_redirects,
            )

        return await self._authorised(what, send, repo=repo)

    def _api_path(self, url: str) -> str:
        """``url``'s path below the API's base (``/repos/o/r/...``), for any URL form."""
        base = httpx.URL(self.config.api_url)
        path = httpx.URL(url).path if "://" in url else url
        prefix = base.path.rstrip("/")
        return path.removeprefix(prefix) if prefix and path.startswith(prefix + "/") else path

    def error(self, response: httpx.Response, what: str) -> ForgeError:
        """The ForgeError for GitHub's error ``response`` to a request about ``what``."""
        status = response.status_code
        said = f"GitHub said {status}: {github_detail(response)}"
        if status in (401, 403, 429):
            return self._access_error(response, what, said)
        if status in (404, 410):
            return ForgeNotFound(
                f"GitHub has no {what} ({said}), or the token ({self.token_source}) "
                "cannot see it (private repositories answer 404): check the name and the "
                "token's access"
            )
        if status == 422:
            return _rejection(what, github_detail(response), said)
        if status >= 500:
            return ForgeUnavailable(f"GitHub failed {what} ({said}) after retries; try later")
        return ForgeRequestRejected(f"GitHub refused {what} ({said})")

    def _access_error(self, response: httpx.Response, what: str, said: str) -> ForgeError:
        env = self.token_source
        status = response.status_code
        if status == 401:
            return self._token_refused(what, said)
        if status == 429 or _rate_limit_wait(response) is not None:
            return ForgeRateLimited(
                f"GitHub's rate limit stopped {what} ({said}) {_reset_note(response)}; wait, "
                + ("or use a token with a higher limit" if self.has_token else f"or set {env}")
            )
        return ForgeAuthError(
            f"GitHub refused {what} ({said}): the token ({env}) lacks a permission it "
            "needs (issues and pull requests: read and write; contents: read)"
        )


async def _stream_tail(
    client: httpx.AsyncClient, url: httpx.URL, what: str, limit: int, max_read: int
) -> Download:
    async with client.stream("GET", url) as response:
        if response.status_code in (403, 404, 410):
            raise ForgeNotFound(
                f"{what} cannot be downloaded any more ({url.host} said "
                f"{response.status_code}): it has expired or was deleted"
            )
        if response.status_code >= 400:
            raise ForgeUnavailable(f"{url.host} failed {what} ({response.status_code}); try later")
        return await read_tail(response, limit, max_read)


def _rejection(what: str, detail: str, said: str) -> ForgeRequestRejected:
    lowered = detail.lower()
    if "pull request already exists" in lowered:
        return PullRequestExists(
            f"{what}: a pull request for this branch is already open ({said}); update it, "
            "or push to a new branch"
        )
    if "no commits between" in lowered:
        return ForgeRequestRejected(
            f"GitHub refused {what} ({said}): push the branch with its commits first, and "
            "check the base branch"
        )
    return ForgeRequestRejected(f"GitHub refused {what} ({said})")


def github_detail(response: httpx.Response) -> str:
    """GitHub's ``message``, its ``errors`` and ``documentation_url``, as one line,
    cleaned (a forge's text, ``golem.core.ansi.clean``)."""
    return clean(_detail(response), multiline=False)


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if not isinstance(body, dict):
        return str(body)[:300]
    parts = [str(body.get("message") or response.reason_phrase)]
    for error in body.get("errors") or []:
        if isinstance(error, dict):
            fields = [str(error.get(k)) for k in ("resource", "field", "code") if error.get(k)]
            parts.append(str(error.get("message") or " ".join(fields)))
        else:
            parts.append(str(error))
    text = "; ".join(parts)
    if body.get("documentation_url"):
        text += f" (see {body['documentation_url']})"
    return text


def retried_wait(response: httpx.Response) -> float | None:
    """The wait of a 403 or 429 that is a rate limit (None for anything else)."""
    return _rate_limit_wait(response) if response.status_code in (403, 429) else None


def _rate_limit_wait(response: httpx.Response) -> float | None:
    """Seconds GitHub asks to wait, for a rate-limit answer; None if it is not one."""
    headers = response.headers
    asked = retry_after(response)
    if asked is not None:
        return asked
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(headers["x-ratelimit-reset"]) - time.time())
        except (KeyError, ValueError):
            return 60.0
    if "secondary rate limit" in github_detail(response).lower():
        return 60.0  # GitHub's advice when it names no wait
    return None


def _reset_note(response: httpx.Response) -> str:
    reset = response.headers.get("x-ratelimit-reset")
    if reset is None or not reset.isdigit():
        return "(no reset time given)"
    return f"until {time.strftime('%H:%M:%S UTC', time.gmtime(int(reset)))}"
