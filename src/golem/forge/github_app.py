"""A GitHub App's installation tokens, minted per use.

golem signs a JWT with the App's private key (RS256, ten minutes at most, as GitHub asks),
finds the App's installation on the repository (``GET /repos/{owner}/{repo}/installation``,
unless ``installation_id`` names it) and exchanges the JWT for an installation token
(``POST /app/installations/{id}/access_tokens``), which lasts an hour. The token is kept
and sent until it is within its refresh margin of the ``expires_at`` GitHub gave it
(``golem.forge.tokens.Minted``), or until GitHub or git refuses it: then the next one is
minted. A key GitHub refuses, or an App not installed where it is needed, is a
``ForgeCredentialsRefused`` that says what to fix.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from golem.core.errors import ForgeCredentialsRefused, ForgeError
from golem.forge.github_api import API_VERSION, github_detail, retried_wait
from golem.forge.rest import Retries
from golem.forge.tokens import Clock, Minted, MintedTokens

__all__ = ["GitHubAppTokens", "check_app_key"]

JWT_LIFETIME = 540
"""Seconds a JWT is valid for (GitHub takes at most 600); its ``iat`` is 60 s back, for
clock drift, as GitHub advises."""


def check_app_key(pem: str, where: str) -> RSAPrivateKey:
    """The App's private key from ``pem``; ForgeCredentialsRefused when it is not an RSA
    private key in PEM (``where`` says where it came from)."""
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise ForgeCredentialsRefused(
            f"the GitHub App's private key ({where}) is not an unencrypted private key in "
            "PEM form: generate one in the App's settings (General, Private keys) and give "
            "golem the downloaded .pem file as it is"
        ) from exc
    if not isinstance(key, RSAPrivateKey):
        raise ForgeCredentialsRefused(
            f"the GitHub App's private key ({where}) is not an RSA key; GitHub Apps sign "
            "with RSA: give golem the .pem file the App's settings generated"
        )
    return key


class GitHubAppTokens:
    """The installation tokens of one GitHub App (``app_id``, ``private_key`` PEM), at the
    API ``api_url``. ``installation_id`` None: the installation on each repository (or the
    App's only one, for a call that names no repository). ``clock`` is the wall clock."""

    def __init__(
        self,
        app_id: int,
        private_key: str,
        *,
        api_url: str,
        installation_id: int | None = None,
        source: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        clock: Clock = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.app_id = app_id
        self.source = source or f"GitHub App {app_id}"
        self.api_url = api_url.rstrip("/")
        self.installation_id = installation_id
        self.clock = clock
        self._pem = private_key
        self._key = check_app_key(private_key, self.source)
        self._timeout = timeout
        self._transport = transport
        self._retries = Retries(
            forge="GitHub",
            api_url=api_url,
            setting="forge.github.api_url",
            max_retries=max_retries,
            max_wait=60.0,
            backoff=1.0,
            rate_limit_wait=retried_wait,
        )
        self._tokens: dict[int, Minted] = {}
        self._installations: dict[str, int] = {}
        self._last: int | None = None
        self._minted = MintedTokens()
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"GitHubAppTokens(app_id={self.app_id}, source={self.source!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (a run carried to a cluster's node): no lock, no listeners, no key
        object (it is loaded again from its PEM)."""
        state = dict(self.__dict__)
        state.update(_lock=None, _key=None, _minted=MintedTokens())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._key = check_app_key(self._pem, self.source)

    async def token(self, repo: str | None = None) -> str:
        """The installation's token: the one kept while usable, else a new one."""
        installation = await self._installation(repo)
        async with self._locked():
            kept = self._tokens.get(installation)
            if kept is not None and kept.usable(self.clock()):
                return kept.value
            return await self._mint(installation)

    async def refresh(self, stale: str, repo: str | None = None) -> str:
        """A new token for the installation (``stale`` was refused), unless one was minted
        since ``stale``."""
        installation = await self._installation(repo)
        async with self._locked():
            kept = self._tokens.get(installation)
            if kept is not None and kept.value != stale and kept.usable(self.clock()):
                return kept.value
            return await self._mint(installation)

    def secrets(self) -> list[str]:
        """The App's key and every token minted."""
        return [self._pem, *self._minted.values]

    def on_minted(self, learn: Callable[[str], None]) -> None:
        """Call ``learn`` with each token minted from now on."""
        self._minted.listen(learn)

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def app_jwt(self) -> str:
        """A JWT that speaks for the App (``iss``: its id) for the next few minutes."""
        issued = int(self.clock()) - 60
        claims = {"iat": issued, "exp": issued + 60 + JWT_LIFETIME, "iss": str(self.app_id)}
        return jwt.encode(claims, self._key, algorithm="RS256")

    async def _installation(self, repo: str | None) -> int:
        if self.installation_id is not None:
            return self.installation_id
        if repo is None:
            return self._last if self._last is not None else await self._only_installation()
        key = repo.lower()
        if key not in self._installations:
            found = await self._app_call("GET", f"/repos/{repo}/installation", repo)
            self._installations[key] = int(found["id"])
        self._last = self._installations[key]
        return self._last

    async def _only_installation(self) -> int:
        found = await self._app_call("GET", "/app/installations", None)
        ids = [int(item["id"]) for item in found or []]
        if len(ids) != 1:
            raise ForgeCredentialsRefused(
                f"{self.source} has {len(ids)} installations and this call names no "
                "repository: set [forge.github] installation_id (or the tenant's "
                "installation_id) to the one golem should use"
            )
        self._last = ids[0]
        return ids[0]

    async def _mint(self, installation: int) -> str:
        asked = self.clock()
        path = f"/app/installations/{installation}/access_tokens"
        answer = await self._app_call("POST", path, None, installation=installation)
        value = str(answer["token"])
        expires = _timestamp(answer.get("expires_at"))
        self._tokens[installation] = Minted(value, expires, minted_at=asked)
        self._minted.add(value)
        return value

    async def _app_call(
        self, method: str, path: str, repo: str | None, *, installation: int | None = None
    ) -> Any:
        """A request made as the App itself (its JWT), translated into what to fix."""
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "golem",
        }
        async with httpx.AsyncClient(
            base_url=self.api_url,
            headers=headers,
            timeout=self._timeout,
            transport=self._transport,
        ) as client:

            async def attempt_once() -> httpx.Response:
                signed = {"Authorization": f"Bearer {self.app_jwt()}"}
                return await client.request(method, path, headers=signed)

            response = await self._retries.send(
                attempt_once, lambda answer: self._refused(answer, repo, installation)
            )
        return response.json() if response.content else None

    def _refused(
        self, response: httpx.Response, repo: str | None, installation: int | None
    ) -> ForgeError:
        said = f"GitHub said {response.status_code}: {github_detail(response)}"
        status = response.status_code
        if status == 401:
            return ForgeCredentialsRefused(
                f"GitHub refused {self.source}'s signature ({said}): the private key is not "
                f"this App's, was deleted, or app_id {self.app_id} is wrong (or this host's "
                "clock is off by minutes). Generate a new private key in the App's settings "
                "and give it to golem ([forge.github] private_key, or the tenant's "
                "credentials: PUT /v1/credentials/github)"
            )
        if status == 404 and repo is not None:
            return ForgeCredentialsRefused(
                f"{self.source} is not installed on {repo} ({said}): install the App on the "
                "repository (or its account), or set installation_id"
            )
        if status in (403, 404) and installation is not None:
            return ForgeCredentialsRefused(
                f"{self.source} cannot mint a token for installation {installation} ({said}):"
                " the installation was removed or suspended, or is another App's; install "
                "the App again, or fix installation_id"
            )
        return ForgeError(f"GitHub refused a request of {self.source} ({said}); try later")


def _timestamp(value: object) -> float | None:
    """Epoch seconds of GitHub's ``expires_at`` (``2024-05-01T13:00:00Z``); None if absent."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
