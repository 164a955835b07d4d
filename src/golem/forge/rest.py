"""What the forges' REST clients (``GitHubAPI``, ``GitLabAPI``) share: ``RestAPI``, their
base (the token asked of its source for each request and sent to the API's origin only;
sending a request again after network errors, 502/503/504 (doubling backoff), rate limits
the forge names a wait for, and once after a 401 with a fresh token; pagination links kept
to the API's origin; a refused or missing token as the fitting error); the bounded tail of
a download (a CI job's log); and a reply's JSON, cleaned (``decoded``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar
from urllib.parse import quote, unquote

import httpx

from golem.core.ansi import clean_json
from golem.core.errors import ForgeAuthError, ForgeError, ForgeRequestRejected, ForgeUnavailable
from golem.forge.tokens import StaticToken, TokenSource

__all__ = [
    "MAX_DOWNLOAD",
    "RETRIED_STATUSES",
    "Download",
    "RestAPI",
    "Retries",
    "decoded",
    "origin",
    "read_tail",
    "retry_after",
]

RETRIED_STATUSES = frozenset({502, 503, 504})
MAX_REFRESHES = 2
"""Fresh tokens one request may try after a 401: the second serves when the first was one
another holder had kept, and it proved stale too."""
MAX_DOWNLOAD = 64 * 1024 * 1024
"""Bytes of a download read at most: a log that never ends does not hold a run."""


class Download(NamedTuple):
    """The end of a download: ``tail``, and whether it is the real end (``complete``) or
    where reading stopped."""

    tail: bytes
    complete: bool


async def read_tail(response: httpx.Response, limit: int, max_read: int) -> Download:
    """The last ``limit`` bytes of a streamed ``response``, reading at most ``max_read``."""
    tail, read = b"", 0
    async for chunk in response.aiter_bytes():
        tail, read = (tail + chunk)[-limit:], read + len(chunk)
        if read >= max_read:
            return Download(tail, complete=False)
    return Download(tail, complete=True)


def decoded(response: httpx.Response) -> Any:
    """A reply's JSON (None when it is empty) with every string in it cleaned
    (``golem.core.ansi.clean``): where what a forge says (a CI job's name, an issue's
    title, a comment, a login, a branch) enters golem, so that nothing golem stores or
    shows of it carries an escape sequence, a control character or hidden text."""
    return clean_json(response.json()) if response.content else None


PATH_CHARACTERS = re.compile(r"^[A-Za-z0-9._~%:@!$&'()*+,;=/-]*$")
"""What a request path golem builds may hold: RFC 3986's path characters, nothing that
starts a query or a fragment, no space or control character."""


def segment(value: str | int, *, slashes: bool = False) -> str:
    """``value`` as a path segment of an API request, percent-encoded (with ``slashes``,
    a branch name's ``/`` is kept: GitHub's branch routes take them)."""
    return quote(str(value), safe="/" if slashes else "")


def checked_path(path: str, forge: str) -> str:
    """``path`` (an API path golem built, ``/repos/...``) if no part of it could lead the
    request elsewhere than its template says: no ``.`` or ``..`` segment (in any
    percent-encoded spelling), no query, fragment, space or control character. Every
    value golem puts into a path is either a checked name or passed through ``segment``;
    this is the guard for whatever was not."""
    decoded = unquote(path)
    names = decoded.split("/")
    if (
        not PATH_CHARACTERS.match(path)
        or any(name in (".", "..") for name in names)
        or ("\\" in decoded or any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded))
    ):
        raise ForgeRequestRejected(
            f"golem refused to send {forge} a request for {path!r}: a value in it is not a "
            "plain name (a '..', '?', '#', space or control character); check the repository, "
            "branch or user it names"
        )
    return path


def origin(url: httpx.URL | str) -> tuple[str, str, int | None]:
    """Scheme, host and port: where a token may go."""
    parsed = httpx.URL(url)
    return parsed.scheme, parsed.host, parsed.port


def retry_after(response: httpx.Response) -> float | None:
    """The seconds ``Retry-After`` asks for (60 when it says no number), or None."""
    if "retry-after" not in response.headers:
        return None
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except ValueError:
        return 60.0


@dataclass(frozen=True)
class Retries:
    """How one forge's client retries: ``forge`` and ``setting`` name it in messages
    (``GitHub``, ``forge.github.api_url``); ``rate_limit_wait`` is the wait the forge asks
    for in a refusal (None: it is no rate limit)."""

    forge: str
    api_url: str
    setting: str
    max_retries: int
    max_wait: float
    backoff: float
    rate_limit_wait: Callable[[httpx.Response], float | None]

    async def send(
        self,
        attempt_once: Callable[[], Awaitable[httpx.Response]],
        error: Callable[[httpx.Response], ForgeError],
        *,
        refresh: Callable[[], Awaitable[bool]] | None = None,
    ) -> httpx.Response:
        """The first answer below 400 of ``attempt_once``, tried again while allowed;
        else ``error(response)`` (its body read), or ForgeUnavailable when unreachable.
        A 401 is tried again when ``refresh`` gets a fresh token (True), at most
        ``MAX_REFRESHES`` times."""
        attempt = refreshed = 0
        while True:
            try:
                response = await attempt_once()
            except httpx.TransportError as exc:
                if attempt >= self.max_retries:
                    raise ForgeUnavailable(
                        f"cannot reach {self.forge} at {self.api_url} ({type(exc).__name__}: "
                        f"{exc}): check the network, any proxy, and {self.setting}"
                    ) from exc
                await asyncio.sleep(self.backoff * 2.0**attempt)
                attempt += 1
                continue
            if response.status_code < 400:
                return response
            await response.aread()
            if response.status_code == 401 and refresh is not None and refreshed < MAX_REFRESHES:
                refreshed += 1
                await response.aclose()
                if await refresh():
                    continue
            delay = self.delay(response, attempt)
            if delay is None:
                raise error(response)
            await asyncio.sleep(delay)
            attempt += 1

    def delay(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None to give up now."""
        if attempt >= self.max_retries:
            return None
        if response.status_code in RETRIED_STATUSES:
            return self.backoff * 2.0**attempt
        wait = self.rate_limit_wait(response)
        return wait if wait is not None and wait <= self.max_wait else None


class APISettings(Protocol):
    """What a forge's configuration says of its API."""

    @property
    def api_url(self) -> str: ...
    @property
    def token_env(self) -> str: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def max_wait(self) -> float: ...


Settings = TypeVar("Settings", bound=APISettings)
Params = Mapping[str, str | int]
MAX_PAGES = 50


class RestAPI(Generic[Settings]):
    """A client of one forge's REST API: ``forge`` and ``setting`` name it in messages,
    ``headers`` are sent with every request; a subclass says how a token is sent
    (``auth_headers``), what a refusal means (``error``) and what wait a rate limit asks
    for (``rate_limit_wait``)."""

    forge: ClassVar[str]
    setting: ClassVar[str]
    headers: ClassVar[dict[str, str]]

    def __init__(
        self,
        config: Settings,
        *,
        token: str | None = None,
        tokens: TokenSource | None = None,
        token_source: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        backoff: float = 1.0,
    ) -> None:
        """The token comes from ``tokens``, else is ``token`` as it is (none: requests go
        without one); ``token_source`` says where it came from, for error messages
        (default: the source's own word, or the variable ``config.token_env`` names)."""
        default_source = tokens.source if tokens is not None else f"${config.token_env}"
        self.token_source = token_source or default_source
        if tokens is None and token:
            tokens = StaticToken(token, self.token_source)
        self._tokens = tokens
        self._transport = transport
        self.config = config
        self.retries = Retries(
            forge=self.forge,
            api_url=config.api_url,
            setting=self.setting,
            max_retries=config.max_retries,
            max_wait=config.max_wait,
            backoff=backoff,
            rate_limit_wait=self.rate_limit_wait,
        )

    @property
    def has_token(self) -> bool:
        """Whether requests carry a token."""
        return self._tokens is not None

    @staticmethod
    def rate_limit_wait(response: httpx.Response) -> float | None:
        """Seconds the forge asks to wait in ``response``; None when it is no rate limit."""
        raise NotImplementedError

    def auth_headers(self, token: str) -> dict[str, str]:
        """The headers that carry ``token``."""
        return {"Authorization": f"Bearer {token}"}

    def error(self, response: httpx.Response, what: str) -> ForgeError:
        """The ForgeError for the forge's error ``response`` to a request about ``what``."""
        raise NotImplementedError

    async def call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Params | None = None,
    ) -> Any:
        """One request; its JSON reply. ``what`` names the target in error messages."""
        async with self._client() as client:
            response = await self._send(client, method, path, what, json=json, params=params)
            await response.aread()
        return decoded(response)

    async def paginate(
        self, path: str, what: str, params: Params | None = None, *, key: str | None = None
    ) -> list[Any]:
        """Every item of a list endpoint, following the next pages the forge names (at
        most ``MAX_PAGES``); ``key`` names the list in endpoints that wrap it
        (``{"total_count", "check_runs": [...]}``)."""
        items: list[Any] = []
        url: str | httpx.URL | None = path
        query: Params | None = {"per_page": 100, **(params or {})}
        async with self._client() as client:
            for _ in range(MAX_PAGES):
                if url is None:
                    break
                response = await self._send(client, "GET", url, what, params=query)
                await response.aread()
                page = decoded(response)
                items.extend((page.get(key) or []) if key is not None else page)
                url, query = self._next_page(response), None  # the next URL has its query
        return items

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
        """The answer to one request (through ``_authorised``), its body maybe not read."""
        raise NotImplementedError

    def _next_page(self, response: httpx.Response) -> str | httpx.URL | None:
        """The next page ``response`` names (through ``_same_origin``), or None."""
        raise NotImplementedError

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.config.api_url,
            headers={**self.headers, "User-Agent": "golem"},
            timeout=self.config.timeout,
            transport=self._transport,
            follow_redirects=True,
        )

    def _same_origin(self, link: str) -> str:
        """``link`` (a next page the forge named), refused when it leaves the API's origin."""
        api_url = self.config.api_url
        if origin(link) != origin(api_url):
            raise ForgeError(
                f"{self.forge}'s next page {link!r} is on another host than {api_url}: golem "
                f"does not send the token there; check {self.setting}"
            )
        return link

    async def _authorised(
        self,
        what: str,
        send: Callable[[dict[str, str]], Awaitable[httpx.Response]],
        *,
        repo: str | None = None,
    ) -> httpx.Response:
        """``send(headers)``'s answer, its headers carrying a token for ``repo`` asked of
        the source for each attempt, retried as ``retries`` says (a 401 with a fresh one)."""
        sent: list[str] = []  # the token the last attempt carried

        async def attempt_once() -> httpx.Response:
            headers = {}
            if self._tokens is not None:
                sent[:] = [await self._tokens.token(repo)]
                headers = self.auth_headers(sent[0])
            return await send(headers)

        async def refreshed() -> bool:
            tokens = self._tokens
            return (
                bool(sent)
                and tokens is not None
                and await tokens.refresh(sent[0], repo) is not None
            )

        return await self.retries.send(
            attempt_once, lambda response: self.error(response, what), refresh=refreshed
        )

    def _token_refused(self, what: str, said: str) -> ForgeAuthError:
        """A 401: no token where one is wanted, or one the forge does not take."""
        if not self.has_token:
            return ForgeAuthError(
                f"{self.forge} wants a token for {what} ({said}): set {self.token_source}"
            )
        return ForgeAuthError(
            f"{self.forge} refused the token ({self.token_source}) for {what} ({said}): it is "
            "wrong, expired or revoked; set a valid one"
        )
