"""GitLab OAuth access tokens, refreshed per use.

An OAuth access token lasts two hours; its refresh token mints the next one through
``POST /oauth/token`` (``grant_type=refresh_token``), and GitLab spends the refresh token
it was given (the answer carries a new one). So the grant is refreshed before its access
token's ``expires_in`` runs out (``golem.forge.tokens.Minted``) and after any 401, and each
new grant is kept by a ``GrantKeeper`` before its token is used: the store for a tenant's
grant (``StoredGrant``), a file in the state directory for the host's own (``FileGrant``).
A keeper replaces a grant only if it still holds the one the refresh started from, so of
two refreshes (two runs, two servers) one grant is kept, and whoever lost adopts it; a
restart reads the kept grant, never the spent refresh token. A refresh token GitLab
refuses (revoked, expired, spent) is a ``ForgeCredentialsRefused`` saying how to authorise
golem again.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from golem.core.errors import ForgeCredentialsRefused, ForgeError
from golem.forge.gitlab_api import gitlab_detail
from golem.forge.rest import RETRIED_STATUSES, Retries
from golem.forge.tokens import Clock, Minted, MintedTokens
from golem.store import OAuthGrant, SqlStore, Store, TokenCipher

__all__ = ["FileGrant", "GitLabOAuthTokens", "GrantKeeper", "StoredGrant"]

AUTHORISE_AGAIN = (
    "authorise golem's OAuth application again and give golem the new access and refresh "
    "tokens (the tenant's: PUT /v1/credentials/gitlab with token and refresh_token; the "
    "host's: [forge.gitlab] token_env and refresh_token_env, then delete {file})"
)


class GrantKeeper(Protocol):
    """Where a grant is kept between refreshes, so that a restart or another run reads the
    newest one."""

    where: str
    """For messages: ``tenant acme's stored grant``, a file's path."""

    async def load(self) -> OAuthGrant | None:
        """The grant kept now (None: none is)."""
        ...

    async def replace(self, old: OAuthGrant, new: OAuthGrant) -> bool:
        """Keep ``new`` if ``old`` is still the grant kept; False otherwise."""
        ...


class StoredGrant:
    """A tenant's grant in golem's store (sealed). It travels to another process (a run
    carried to a cluster's node) as its database's address: there it opens the store for
    each load and replace."""

    def __init__(self, store: Store, cipher: TokenCipher, tenant: str) -> None:
        self.store: Store | None = store
        self.cipher = cipher
        self.tenant = tenant
        self.where = f"tenant {tenant}'s stored GitLab grant"
        self._url: str | None = getattr(store, "url", None)

    def __getstate__(self) -> dict[str, Any]:
        if self._url is None:
            raise TypeError(f"{self.where} is kept in memory: it cannot leave this process")
        cipher = (self.cipher.key_env, self.cipher.key_file)
        return {"url": self._url, "cipher": cipher, "tenant": self.tenant}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.store, self.cipher = None, TokenCipher(*state["cipher"])
        self.tenant, self._url = state["tenant"], state["url"]
        self.where = f"tenant {self.tenant}'s stored GitLab grant"

    async def load(self) -> OAuthGrant | None:
        """The grant the store holds for the tenant."""
        kept = await self._on_store(lambda store: store.credentials.reveal("gitlab", self.cipher))
        return kept if isinstance(kept, OAuthGrant) else None

    async def replace(self, old: OAuthGrant, new: OAuthGrant) -> bool:
        """Compare-and-swap in the store."""
        return bool(
            await self._on_store(
                lambda store: store.credentials.replace_grant("gitlab", old, new, self.cipher)
            )
        )

    async def _on_store(self, work: Callable[[Store], Awaitable[Any]]) -> Any:
        if self.store is not None:
            return await work(self.store)
        assert self._url is not None  # unpickled: its database's address came along
        store = await SqlStore.connect(self._url, tenant=self.tenant)
        try:
            return await work(store)
        finally:
            await store.close()


class FileGrant:
    """The host's own grant: seeded from its variables, kept after each refresh in a file
    (mode 0600, replaced atomically under a lock) that wins over the variables for as long
    as they hold the refresh token it was seeded from."""

    def __init__(self, path: Path, seed: OAuthGrant) -> None:
        self.path = path
        self.seed = seed
        self.where = str(path)

    async def load(self) -> OAuthGrant | None:
        """The file's grant when it grew from this seed, else the seed."""
        return await asyncio.to_thread(self._under_lock, self._read)

    async def replace(self, old: OAuthGrant, new: OAuthGrant) -> bool:
        """Write ``new`` if the file (or the seed) still holds ``old``."""
        return await asyncio.to_thread(self._under_lock, lambda: self._swap(old, new))

    def _under_lock(self, work: Callable[[], Any]) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return work()
        finally:
            os.close(lock)

    def _read(self) -> OAuthGrant:
        try:
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return self.seed
        if not isinstance(kept, dict) or kept.get("seed") != _fingerprint(self.seed):
            return self.seed  # new variables: the person gave golem a new grant
        with contextlib.suppress(ValueError):
            return OAuthGrant.model_validate(kept.get("grant"))
        return self.seed

    def _swap(self, old: OAuthGrant, new: OAuthGrant) -> bool:
        if self._read().refresh_token != old.refresh_token:
            return False
        document = {"seed": _fingerprint(self.seed), "grant": new.model_dump(mode="json")}
        partial = self.path.with_suffix(".partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(document, file)
            file.flush()
            os.fsync(file.fileno())
        partial.replace(self.path)
        return True


def _fingerprint(seed: OAuthGrant) -> str:
    return hashlib.sha256(seed.refresh_token.encode()).hexdigest()


class GitLabOAuthTokens:
    """The access tokens of one OAuth grant on the GitLab at ``base_url``."""

    def __init__(
        self,
        grant: OAuthGrant,
        *,
        base_url: str,
        keeper: GrantKeeper | None = None,
        source: str = "GitLab OAuth grant",
        timeout: float = 30.0,
        max_retries: int = 3,
        clock: Clock = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.source = source
        self.base_url = base_url.rstrip("/")
        self.keeper = keeper
        self.clock = clock
        self._grant = grant
        self._minted_at = clock()
        self._timeout = timeout
        self._transport = transport
        self._retries = Retries(
            forge="GitLab",
            api_url=self.base_url,
            setting="forge.gitlab.base_url",
            max_retries=max_retries,
            max_wait=60.0,
            backoff=1.0,
            rate_limit_wait=_no_wait,
        )
        self._minted = MintedTokens()
        self._spent: list[str] = []
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"GitLabOAuthTokens(source={self.source!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Picklable: no lock, no listeners."""
        state = dict(self.__dict__)
        state.update(_lock=None, _minted=MintedTokens())
        return state

    async def token(self, repo: str | None = None) -> str:
        """The access token: the grant's while usable, else a refreshed one."""
        async with self._locked():
            grant = self._grant
            if self._is_usable(grant):
                return grant.access_token
            return await self._renew(grant.access_token)

    async def refresh(self, stale: str, repo: str | None = None) -> str:
        """A new access token (``stale`` was refused), unless one came since ``stale``."""
        async with self._locked():
            return await self._renew(stale)

    def secrets(self) -> list[str]:
        """Every access and refresh token seen, and the application's secret."""
        grant = self._grant
        held = [grant.access_token, grant.refresh_token, grant.client_secret or ""]
        return [value for value in [*held, *self._spent, *self._minted.values] if value]

    def on_minted(self, learn: Callable[[str], None]) -> None:
        """Call ``learn`` with each access and refresh token from now on."""
        self._minted.listen(learn)

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def _adopt(self, grant: OAuthGrant) -> str:
        if grant != self._grant:
            self._spent += [self._grant.access_token, self._grant.refresh_token]
            self._grant, self._minted_at = grant, self.clock()
            self._minted.add(grant.access_token)
            self._minted.add(grant.refresh_token)
        return grant.access_token

    async def _renew(self, stale: str) -> str:
        """The newest grant's token: one kept since ``stale`` (another run refreshed), or
        one refreshed now from the newest grant kept."""
        current = self._grant
        if self.keeper is not None:
            kept = await self.keeper.load()
            if kept is not None:
                current = kept
        if current.access_token != stale and self._is_usable(current):
            return self._adopt(current)
        try:
            renewed = await self._exchange(current)
        except ForgeCredentialsRefused:
            kept = await self.keeper.load() if self.keeper is not None else None
            if kept is not None and kept.refresh_token != current.refresh_token:
                return self._adopt(kept)  # refreshed elsewhere meanwhile: it spent ours
            raise
        if self.keeper is not None and not await self.keeper.replace(current, renewed):
            kept = await self.keeper.load()
            if kept is not None:
                return self._adopt(kept)
        return self._adopt(renewed)

    def _is_usable(self, grant: OAuthGrant) -> bool:
        if not grant.access_token:
            return False
        return Minted(grant.access_token, grant.expires_at, self._minted_at).usable(self.clock())

    async def _exchange(self, grant: OAuthGrant) -> OAuthGrant:
        """``POST /oauth/token`` with the grant's refresh token: the next grant."""
        form = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
        if grant.client_id:
            form["client_id"] = grant.client_id
        if grant.client_secret:
            form["client_secret"] = grant.client_secret
        asked = self.clock()
        async with httpx.AsyncClient(
            base_url=self.base_url,
            timeout=self._timeout,
            transport=self._transport,
            headers={"Accept": "application/json", "User-Agent": "golem"},
        ) as client:

            async def attempt_once() -> httpx.Response:
                return await client.post("/oauth/token", data=form)

            response = await self._retries.send(attempt_once, self._refused)
        body = response.json()
        lifetime = body.get("expires_in")
        return grant.model_copy(
            update={
                "access_token": str(body["access_token"]),
                "refresh_token": str(body.get("refresh_token") or grant.refresh_token),
                "expires_at": asked + float(lifetime) if lifetime is not None else None,
            }
        )

    def _refused(self, response: httpx.Response) -> ForgeError:
        said = f"GitLab said {response.status_code}: {gitlab_detail(response)}"
        again = AUTHORISE_AGAIN.format(file=self.keeper.where if self.keeper else "nothing")
        if response.status_code in (400, 401) and "invalid_client" in response.text:
            return ForgeCredentialsRefused(
                f"GitLab refused the OAuth application of {self.source} ({said}): check "
                "its client id ([forge.gitlab] oauth_client_id, or the tenant's client_id) "
                "and secret"
            )
        if response.status_code in (400, 401):
            return ForgeCredentialsRefused(
                f"GitLab refused the refresh token of {self.source} ({said}): it was "
                f"revoked, expired, or spent by another refresh golem does not know of; {again}"
            )
        if response.status_code in RETRIED_STATUSES or response.status_code >= 500:
            return ForgeError(f"GitLab could not refresh {self.source} ({said}); try later")
        return ForgeError(f"GitLab refused to refresh {self.source} ({said})")


def _no_wait(response: httpx.Response) -> float | None:
    return None
