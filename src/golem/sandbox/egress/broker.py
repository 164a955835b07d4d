"""Credential brokering: real values stay on the host, boxes hold sentinels.

For one box session, each configured credential gets a fresh random sentinel. The box's
environment carries sentinels only; on a request to a host a credential applies to, and to
no other, the proxy swaps the sentinel for the real value (or sets basic auth), and masks
the real value (and the form golem sent it in) in what comes back, so an upstream that
echoes it cannot leak it. An answer's content encoding cannot hide it either: gzip and
deflate are decoded before masking, any other encoding is refused (``answers``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from golem.core.errors import ConfigError
from golem.core.masking import SecretMasker, basic_auth
from golem.core.network import Credential

__all__ = ["ROUTE_PREFIX", "Brokered", "CredentialBroker", "read_credential_values"]

ROUTE_PREFIX = "/_golem/"
Headers = list[tuple[bytes, bytes]]


def read_credential_values(credentials: Sequence[Credential]) -> dict[str, str]:
    """The real value of each credential, from its env var, file or config."""
    values = {}
    for credential in credentials:
        if credential.value is not None:
            value = credential.value.get_secret_value()
        elif credential.from_env is not None:
            value = os.environ.get(credential.from_env, "")
            if not value:
                raise ConfigError(
                    f"credential {credential.name!r}: the host variable {credential.from_env} "
                    "is not set; export it where golem runs"
                )
        else:
            assert credential.from_file is not None
            try:
                value = credential.from_file.read_text().strip()
            except OSError as exc:
                raise ConfigError(
                    f"credential {credential.name!r}: cannot read {credential.from_file}: "
                    f"{exc.strerror}"
                ) from None
        if not value or "\n" in value or "\r" in value:
            raise ConfigError(f"credential {credential.name!r}: its value is empty or multi-line")
        values[credential.name] = value
    return values


@dataclass(frozen=True)
class Brokered:
    """One credential of a session: its settings, real value and sentinel."""

    credential: Credential
    value: str
    sentinel: str
    host_route: bool = False
    """A route golem registered to a service of its own on this host's loopback (a
    step's MCP gateway): reached only by its route, its Authorization always set."""

    @property
    def secrets(self) -> list[str]:
        """The real value, and the basic-auth token that carries it (what an upstream
        echoing the Authorization header sends back)."""
        if self.credential.auth == "basic":
            return [self.value, basic_auth(self.credential.username, self.value)]
        return [self.value]

    def apply(self, headers: Headers) -> Headers:
        """The request headers with this credential put in."""
        if self.credential.auth == "basic" or self.host_route:
            kept = [(k, v) for k, v in headers if k.lower() != b"authorization"]
            if self.host_route:
                return [*kept, (b"Authorization", b"Bearer " + self.value.encode())]
            token = basic_auth(self.credential.username, self.value).encode()
            return [*kept, (b"Authorization", b"Basic " + token)]
        name = self.credential.header.lower().encode()
        sentinel, value = self.sentinel.encode(), self.value.encode()
        return [(k, v.replace(sentinel, value) if k.lower() == name else v) for k, v in headers]


class CredentialBroker:
    """The credentials of one box session."""

    def __init__(self, credentials: Sequence[Credential], values: dict[str, str]) -> None:
        self.items = [
            Brokered(c, values[c.name], f"golem-sentinel-{c.name}-{secrets.token_hex(16)}")
            for c in credentials
        ]

    def __bool__(self) -> bool:
        return bool(self.items)

    def for_host(self, host: str) -> list[Brokered]:
        """The credentials that apply to ``host`` (a host route only by its route)."""
        return [
            item for item in self.items if not item.host_route and item.credential.matches(host)
        ]

    def add_host_route(self, upstream: str, token: str) -> Brokered:
        """Register a route to a service golem runs on this host's loopback for this
        session (``upstream``: ``http://127.0.0.1:<port>/...``), under a fresh random
        name; requests on it carry ``Authorization: Bearer <token>``, which the box never
        sees. The proxy lets this route, and nothing else, reach the host."""
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.port is None:
            raise ValueError(f"a host route goes to http://127.0.0.1:<port>, not {upstream}")
        name = f"host-{secrets.token_hex(8)}"
        credential = Credential(
            name=name,
            host=r"^127\.0\.0\.1$",
            env="GOLEM_HOST_ROUTE",
            value=token,
            upstream=upstream,
        )
        item = Brokered(credential, token, f"golem-sentinel-{name}", host_route=True)
        self.items.append(item)
        return item

    def remove(self, item: Brokered) -> None:
        """Forget a route added by ``add_host_route``."""
        self.items = [kept for kept in self.items if kept is not item]

    def by_route(self, name: str) -> Brokered | None:
        """The credential whose plain-HTTP route is ``/_golem/<name>``."""
        for item in self.items:
            if item.credential.name == name and item.credential.upstream is not None:
                return item
        return None

    @property
    def values(self) -> list[str]:
        """The real values and the forms golem sends them in (for masking everything that
        comes back)."""
        return [secret for item in self.items for secret in item.secrets]

    def box_env(self, proxy_port: int) -> dict[str, str]:
        """What the box's environment gets: sentinels and plain-HTTP base URLs."""
        env = {}
        for item in self.items:
            credential = item.credential
            if item.host_route:
                continue
            if credential.env is not None:
                env[credential.env] = item.sentinel
            if credential.base_url_env is not None:
                env[credential.base_url_env] = (
                    f"http://127.0.0.1:{proxy_port}{ROUTE_PREFIX}{credential.name}"
                )
        return env


def rewrite_request_headers(headers: Headers, applied: Sequence[Brokered], host: str) -> Headers:
    """Headers for the upstream: credentials in, proxy headers out, and a request for an
    uncompressed answer (which an upstream may ignore: see ``answer_decoder``)."""
    dropped = (b"proxy-authorization", b"proxy-connection", b"accept-encoding", b"host")
    result = [(k, v) for k, v in headers if k.lower() not in dropped]
    for item in applied:
        result = item.apply(result)
    return [(b"Host", host.encode()), *result, (b"Accept-Encoding", b"identity")]


def response_masker(applied: Sequence[Brokered]) -> SecretMasker:
    """Masks the real values in an answer without changing its length."""
    return SecretMasker([secret for item in applied for secret in item.secrets], keep_length=True)
