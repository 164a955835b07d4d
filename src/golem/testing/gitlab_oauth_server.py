"""GitLab's OAuth provider as the loopback servers need it: one OAuth application, the
grants it issued, and ``POST /oauth/token`` with ``grant_type=refresh_token``::

    oauth = OAuthAuthority(lifetime=7200)
    access, refresh = oauth.authorise()       # what a person's consent hands golem
    with GitLabServer(oauth=oauth) as api, GitHttpServer(root, oauth.accepts, username="oauth2"):
        ...
        oauth.revoke_access()                 # every access token so far answers 401
        assert oauth.refreshes == 1

As on GitLab (Doorkeeper), each refresh spends the refresh token it was given and answers
a new one; a spent, revoked or unknown refresh token is ``400 invalid_grant``; a wrong
client id or secret ``401 invalid_client``. Access tokens live ``lifetime`` seconds by
``clock`` and are sent as ``Authorization: Bearer`` (API) or ``oauth2:TOKEN`` (git).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from golem.testing.wire import Reply

__all__ = ["Grant", "OAuthAuthority"]

INVALID_GRANT = (
    "The provided authorization grant is invalid, expired, revoked, does not match the "
    "redirection URI used in the authorization request, or was issued to another client."
)


@dataclass
class Grant:
    """One access token and the refresh token that came with it."""

    access: str
    refresh: str
    expires_at: float
    revoked: bool = False
    spent: bool = False


class OAuthAuthority:
    """The OAuth side of one GitLab: its application and the grants it issued."""

    def __init__(
        self,
        *,
        client_id: str = "golem-oauth-app",
        client_secret: str | None = "gloas-golemTestSecret0123",  # noqa: S107 (a test app)
        lifetime: float = 7200.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.lifetime = lifetime
        self.clock = clock
        self.grants: list[Grant] = []
        self.refreshes = 0
        self.refused: list[str] = []
        """Access tokens refused (expired, revoked, unknown), in order."""
        self._lock = threading.Lock()

    def authorise(self) -> tuple[str, str]:
        """A first grant, as the person's consent gives it: (access, refresh)."""
        with self._lock:
            grant = self._new()
            return grant.access, grant.refresh

    def accepts(self, access: str) -> bool:
        """Whether ``access`` works now (recorded when it does not)."""
        with self._lock:
            grant = next((g for g in self.grants if g.access == access), None)
            if grant is not None and not grant.revoked and self.clock() < grant.expires_at:
                return True
            self.refused.append(access)
            return False

    def revoke_access(self) -> None:
        """Every access token issued so far stops working (refresh tokens still do)."""
        with self._lock:
            for grant in self.grants:
                grant.expires_at = min(grant.expires_at, self.clock())

    def revoke_all(self) -> None:
        """The person revoked golem's authorisation: nothing issued works any more."""
        with self._lock:
            for grant in self.grants:
                grant.revoked = True

    def access_tokens(self) -> list[str]:
        """Every access token issued, oldest first."""
        with self._lock:
            return [grant.access for grant in self.grants]

    def refresh_tokens(self) -> list[str]:
        """Every refresh token issued, oldest first."""
        with self._lock:
            return [grant.refresh for grant in self.grants]

    def token_endpoint(self, body: bytes) -> Reply:
        """``POST /oauth/token`` (form-encoded, as GitLab takes it)."""
        form = {key: values[-1] for key, values in parse_qs(body.decode()).items()}
        if form.get("grant_type") != "refresh_token":
            return _oauth_error(400, "unsupported_grant_type", "The grant type is not supported.")
        wrong_secret = (
            self.client_secret is not None and form.get("client_secret") != self.client_secret
        )
        if form.get("client_id") != self.client_id or wrong_secret:
            return _oauth_error(401, "invalid_client", "Client authentication failed.")
        with self._lock:
            old = next((g for g in self.grants if g.refresh == form.get("refresh_token")), None)
            if old is None or old.revoked or old.spent:
                return _oauth_error(400, "invalid_grant", INVALID_GRANT)
            old.spent = True
            self.refreshes += 1
            new = self._new()
        body_out = {
            "access_token": new.access,
            "token_type": "Bearer",
            "expires_in": int(self.lifetime),
            "refresh_token": new.refresh,
            "scope": "api",
            "created_at": int(self.clock()),
        }
        return Reply.json(body_out)

    def _new(self) -> Grant:
        grant = Grant(
            access=secrets.token_hex(32),
            refresh=secrets.token_hex(32),
            expires_at=self.clock() + self.lifetime,
        )
        self.grants.append(grant)
        return grant


def _oauth_error(status: int, error: str, description: str) -> Reply:
    return Reply.json({"error": error, "error_description": description}, status=status)


def expired_token_reply() -> Reply:
    """GitLab's 401 for an OAuth access token that expired or was revoked."""
    return Reply.json(
        {
            "error": "invalid_token",
            "error_description": "Token is expired. You can either do re-authorization or "
            "token refresh.",
        },
        status=401,
        headers={
            "www-authenticate": 'Bearer realm="Protected by OAuth 2.0", error="invalid_token"'
        },
    )
