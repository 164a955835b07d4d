"""A GitHub App as GitHub's side sees it, for the loopback servers: the App's key pair, the
JWTs it accepts, its installations and the installation tokens it issued::

    app = AppAuthority(app_id=42, installations={"octo/demo": 7}, lifetime=60)
    with GitHubServer(app=app) as api, GitHttpServer(root, app.accepts) as git:
        ...  # [forge.github] app_id = 42, private_key = app.key_file(tmp_path)
        app.expire_all()        # every token issued so far stops working, now
        assert len(app.issued) == 2

The endpoints (``GitHubServer`` answers them with this authority): ``GET
/repos/{o}/{r}/installation`` and ``GET /app/installations`` and ``POST
/app/installations/{id}/access_tokens`` want the App's JWT (RS256, signed by its key,
``iss`` the App's id, at most ten minutes long, not expired by the authority's ``clock``);
every other request wants an installation token that has not expired: else 401, as GitHub
answers. Tokens live ``lifetime`` seconds by ``clock`` (the test may drive it).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["APP_ROUTES", "AppAuthority", "Issued"]

APP_ROUTES = (
    ("GET", re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)/installation$")),
    ("GET", re.compile(r"^/app/installations$")),
    ("POST", re.compile(r"^/app/installations/(?P<installation>\d+)/access_tokens$")),
)


@dataclass
class Issued:
    """One installation token: its value, installation and expiry (``clock`` time)."""

    token: str
    installation: int
    expires_at: float


def new_key_pem() -> str:
    """A fresh RSA private key, PEM (PKCS#1, as GitHub's App settings hand it out)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


class AppAuthority:
    """GitHub's record of one App: who may sign for it, and the tokens it issued."""

    def __init__(
        self,
        app_id: int = 42,
        *,
        installations: Mapping[str, int] | None = None,
        lifetime: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.app_id = app_id
        self.private_key = new_key_pem()
        loaded = serialization.load_pem_private_key(self.private_key.encode(), password=None)
        assert isinstance(loaded, rsa.RSAPrivateKey)  # new_key_pem makes an RSA key
        self.public_key = loaded.public_key()
        self.installations = dict(installations or {})
        self.lifetime = lifetime
        self.clock = clock
        self.issued: list[Issued] = []
        self.refused: list[str] = []
        """Every token refused as expired or unknown, in order."""
        self._lock = threading.Lock()

    def key_file(self, directory: Path) -> Path:
        """The App's private key written to ``directory/app.pem`` (mode 0600)."""
        path = directory / "app.pem"
        path.write_text(self.private_key)
        path.chmod(0o600)
        return path

    def check_jwt(self, authorization: str | None) -> str | None:
        """None when ``Authorization: Bearer JWT`` speaks for the App now; else why not."""
        if not authorization or not authorization.startswith("Bearer "):
            return "A JSON web token could not be decoded"
        try:
            claims = jwt.decode(
                authorization.removeprefix("Bearer "),
                self.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False},
            )
        except jwt.PyJWTError:
            return "A JSON web token could not be decoded"
        return self._claims_refused(claims)

    def _claims_refused(self, claims: dict[str, object]) -> str | None:
        now, issued, expires = self.clock(), claims.get("iat"), claims.get("exp")
        if str(claims.get("iss")) != str(self.app_id):
            return f"Integration not found for iss {claims.get('iss')}"
        if not isinstance(expires, int) or expires <= now:
            return "'Expiration time' claim ('exp') must be a numeric value in the future."
        if not isinstance(issued, int) or issued > now + 60:
            return "'Issued at' claim ('iat') must be an Integer representing the time."
        if expires - issued > 600:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    def issue(self, installation: int) -> Issued:
        """A new token of ``installation``, ``lifetime`` seconds long."""
        with self._lock:
            issued = Issued(
                f"ghs_{secrets.token_hex(18)}", installation, self.clock() + self.lifetime
            )
            self.issued.append(issued)
            return issued

    def accepts(self, token: str) -> bool:
        """Whether ``token`` is an installation token that works now (recorded if not)."""
        with self._lock:
            found = next((i for i in self.issued if i.token == token), None)
            if found is not None and self.clock() < found.expires_at:
                return True
            self.refused.append(token)
            return False

    def expire_all(self) -> None:
        """Every token issued so far stops working now (the hour has passed)."""
        with self._lock:
            for issued in self.issued:
                issued.expires_at = min(issued.expires_at, self.clock())

    def tokens(self) -> list[str]:
        """Every token issued, oldest first."""
        with self._lock:
            return [issued.token for issued in self.issued]

    def installation_of(self, repo: str) -> int | None:
        """The installation on ``repo`` (None: the App is not installed there)."""
        return self.installations.get(repo)

    @staticmethod
    def timestamp(moment: float) -> str:
        """``moment`` as GitHub writes times: ``2024-05-01T13:00:00Z``."""
        return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
