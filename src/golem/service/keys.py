"""API keys: each belongs to one tenant and has a role; only a hash of it is stored.

A key reads ``golem_<id>_<secret>``: the id finds its row, the secret (256 random bits) is
compared by its SHA-256, in constant time. A slow password hash would add nothing to a
secret that long. The admin key comes from an environment variable, never from a file.

A key that was found valid is remembered for ``CACHE_SECONDS``, by the digest of the whole
presented key (a different secret never matches), so that a busy client costs no database
read per request. Revoking through this store forgets the key at once, and a lookup that
raced with the revocation is not remembered; a key revoked by another process (``golem keys
revoke``, another server on the same database) stops working here within ``CACHE_SECONDS``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass

from golem.core.errors import InvalidRequest
from golem.store import ApiKeyRecord, Role, Store

__all__ = ["ADMIN_TENANT", "KeyStore", "Principal"]

ADMIN_TENANT = "admin"
PREFIX = "golem_"
CACHE_SECONDS = 2.0
CACHE_LIMIT = 10_000  # keys remembered at most


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: a tenant, and what its key's role allows."""

    tenant: str
    role: Role
    key_id: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _valid_tenant(tenant: str) -> str:
    if not tenant or len(tenant) > 64 or not all(c.isalnum() or c in "-_." for c in tenant):
        raise InvalidRequest(f"tenant {tenant!r}: use 1-64 letters, digits, '-', '_' or '.'")
    return tenant


class KeyStore:
    """Keys in golem's store, and the admin key from the environment."""

    def __init__(self, store: Store, admin_key_env: str = "GOLEM_ADMIN_KEY") -> None:
        self._store = store
        self._admin_env = admin_key_env
        self._lock = threading.Lock()  # WebSocket and HTTP routes may share it across threads
        self._known: dict[str, tuple[float, Principal]] = {}  # digest -> (expiry, principal)
        self._revocations = 0  # a lookup that saw an older count is not remembered

    async def create(self, tenant: str, role: Role, name: str = "") -> tuple[ApiKeyRecord, str]:
        """A new key; returns it and its plaintext, which is shown this once."""
        key = ApiKeyRecord(
            id=secrets.token_hex(6), tenant=_valid_tenant(tenant), role=role, name=name
        )
        secret = secrets.token_urlsafe(32)
        await self._store.keys.add(key, _digest(secret))
        return key, f"{PREFIX}{key.id}_{secret}"

    async def authenticate(self, presented: str) -> Principal | None:
        """The principal of a presented key, or None for an unknown, wrong or revoked one."""
        known = self.known(presented)
        if known is not None or not presented.startswith(PREFIX):
            return known
        with self._lock:
            revocations = self._revocations
        until = time.monotonic() + CACHE_SECONDS
        principal = await self._look_up(presented)
        if principal is not None:
            self._remember(_digest(presented), principal, revocations, until)
        return principal

    def known(self, presented: str) -> Principal | None:
        """The principal of the admin key, or of a key found valid in the last
        ``CACHE_SECONDS``, without reading the database (an event loop may call this);
        None: ask ``authenticate``."""
        admin = os.environ.get(self._admin_env)
        if admin and hmac.compare_digest(presented.encode(), admin.encode()):
            return Principal(tenant=ADMIN_TENANT, role="admin", key_id="admin")
        with self._lock:
            remembered = self._known.get(_digest(presented))
        if remembered is not None and remembered[0] > time.monotonic():
            return remembered[1]
        return None

    async def _look_up(self, presented: str) -> Principal | None:
        key_id, _, secret = presented.removeprefix(PREFIX).partition("_")
        found = await self._store.keys.find(key_id)
        if found is None or found[0].revoked:
            return None
        key, digest = found
        if not hmac.compare_digest(_digest(secret), digest):
            return None
        return Principal(tenant=key.tenant, role=key.role, key_id=key.id)

    def _remember(self, digest: str, principal: Principal, revocations: int, until: float) -> None:
        with self._lock:
            if self._revocations != revocations:
                return  # revoked meanwhile, maybe this very key: look it up again next time
            if len(self._known) >= CACHE_LIMIT:
                self._known.clear()  # a cache: whatever falls out is looked up again
            self._known[digest] = (until, principal)

    async def list(self, tenant: str | None = None) -> list[ApiKeyRecord]:
        """Keys, newest first (of one tenant, when given)."""
        return await self._store.keys.all(tenant)

    async def revoke(self, key_id: str) -> bool:
        """Revoke a key; False when there is no such key."""
        done = await self._store.keys.revoke(key_id)
        self._forget(key_id)
        return done

    def _forget(self, key_id: str) -> None:
        """Drop what is remembered of ``key_id``, and keep lookups already under way from
        remembering it."""
        with self._lock:
            self._revocations += 1
            self._known = {d: k for d, k in self._known.items() if k[1].key_id != key_id}
