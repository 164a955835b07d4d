"""Network models: a box's egress policy, the engine's network settings, brokered credentials.

``EgressPolicy`` travels in a BoxSpec (``egress``) and decides, for a box in ``filtered``
mode, which host names, addresses and ports the host-side proxy lets it reach. Its checks
are pure functions of the request; the proxy does the lookups and the connecting.
"""

from __future__ import annotations

import ipaddress
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from golem.core.hostnames import MAX_HOST_NAME, HostPatterns

__all__ = [
    "ALWAYS_REFUSED",
    "Credential",
    "Decision",
    "EgressPolicy",
    "IPAddress",
    "NetworkConfig",
    "RemotePolicy",
    "RemoteScheme",
    "default_runtime_dir",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALWAYS_REFUSED: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
        "fd00:ec2::254/128",
        "::ffff:0:0/96",
        "::/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "2002::/16",
        "2001::/32",
    )
)
"""Private, loopback, link-local (cloud metadata 169.254.169.254 among them), multicast,
reserved, IPv4-mapped and -compatible ranges, and the prefixes that carry an IPv4 address
inside IPv6 (NAT64, 6to4, Teredo): refused unless ``allow_cidrs`` lists them."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Decision(BaseModel):
    """The proxy's verdict on one destination, with the rule that decided it."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    rule: str


class EgressPolicy(BaseModel):
    """What a box in ``filtered`` network mode may reach (``[engine.defaults.egress]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: HostPatterns = Field(
        default_factory=list,
        description=r"Regular expressions of host names to allow, e.g. '^pypi\.org$'.",
    )
    deny: HostPatterns = Field(
        default_factory=list, description="Regular expressions of host names refused first."
    )
    allow_cidrs: list[str] = Field(
        default_factory=list,
        description="Address ranges allowed although private (an internal registry).",
    )
    ports: list[int] = Field(default_factory=lambda: [80, 443], description="Allowed ports.")

    @field_validator("allow_cidrs")
    @classmethod
    def _cidrs_parse(cls, cidrs: list[str]) -> list[str]:
        for cidr in cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ValueError(f"{cidr!r} is not an address range like 10.1.2.0/24") from None
        return cidrs

    @field_validator("ports")
    @classmethod
    def _ports_in_range(cls, ports: list[int]) -> list[int]:
        for port in ports:
            if not 0 < port < 65536:
                raise ValueError(f"{port} is not a TCP port (1-65535)")
        return ports

    @cached_property
    def _allowed_networks(self) -> tuple[IPNetwork, ...]:
        return tuple(ipaddress.ip_network(c, strict=False) for c in self.allow_cidrs)

    def check_name(self, host: str, port: int) -> Decision:
        """Decide on a host name (or address literal) and port, before any lookup."""
        if port not in self.ports:
            return Decision(allowed=False, rule=f"port {port} not in {self.ports}")
        name = host.lower().rstrip(".")
        if len(name) > MAX_HOST_NAME:
            return Decision(allowed=False, rule=f"host name longer than {MAX_HOST_NAME}")
        for pattern in self.deny:
            if re.search(pattern, name):
                return Decision(allowed=False, rule=f"deny {pattern}")
        for pattern in self.allow:
            if re.search(pattern, name):
                return Decision(allowed=True, rule=f"allow {pattern}")
        literal = address_literal(name)
        if literal is not None and self.in_allowed_cidrs(literal):
            return Decision(allowed=True, rule="allow_cidrs")
        return Decision(allowed=False, rule="not in allow list")

    def check_address(self, address: IPAddress, own: frozenset[IPAddress]) -> Decision:
        """Decide on one resolved address (``own``: this host's addresses)."""
        if self.in_allowed_cidrs(address):
            return Decision(allowed=True, rule="allow_cidrs")
        for network in ALWAYS_REFUSED:
            if address in network:
                return Decision(allowed=False, rule=f"address {address} in {network}")
        if address in own:
            return Decision(allowed=False, rule=f"address {address} is this host's")
        return Decision(allowed=True, rule="public address")

    def in_allowed_cidrs(self, address: IPAddress) -> bool:
        """Whether ``allow_cidrs`` lists this address."""
        return any(
            address.version == net.version and address in net for net in self._allowed_networks
        )


def address_literal(host: str) -> IPAddress | None:
    """The address a host string spells (``10.0.0.1``, ``[::1]``), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def default_runtime_dir() -> Path:
    """Where proxy sockets live: /run/golem-net for root, else the user's runtime dir."""
    if os.geteuid() == 0:
        return Path("/run/golem-net")
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "golem-net" if base else Path(f"/tmp/golem-net-{os.geteuid()}")


class NetworkConfig(BaseModel):
    """How the engine gives ``filtered`` boxes their network (``[engine.network]``)."""

    model_config = ConfigDict(extra="forbid")

    proxy_port: int = Field(
        3128, gt=0, lt=65536, description="Loopback port in the box where the proxy answers."
    )
    nameservers: list[str] = Field(
        default_factory=list,
        description="DNS servers the proxy asks (address or address:port); empty: the "
        "host's resolver. Boxes never resolve names themselves.",
    )
    hosts: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Static names the proxy resolves before DNS, like /etc/hosts "
        '(e.g. {"registry.internal" = ["10.1.2.3"]}); the addresses are still checked.',
    )
    upstream_ca: Path | None = Field(
        None,
        description="Extra CA bundle the proxy trusts when it calls brokered hosts over "
        "HTTPS (an internal CA); the system's CAs are always trusted.",
    )
    runtime_dir: Path = Field(
        default_factory=default_runtime_dir,
        description="Host directory for the proxies' sockets (mounted into boxes).",
    )

    @field_validator("hosts")
    @classmethod
    def _addresses_parse(cls, hosts: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, addresses in hosts.items():
            for address in addresses:
                if address_literal(address) is None:
                    raise ValueError(f"hosts.{name}: {address!r} is not an IP address")
        return {name.lower().rstrip("."): addresses for name, addresses in hosts.items()}


class Credential(BaseModel):
    """A credential the egress proxy adds on the way out; boxes never see its value.

    ``header``: the box gets a sentinel in ``env`` (e.g. ANTHROPIC_API_KEY) and sends it as
    usual; on requests to a host matching ``host``, and nowhere else, the proxy replaces
    the sentinel in ``header`` by the real value. ``basic``: the proxy sets HTTP basic
    auth (``username`` and the value) on every request to a matching host, for git over
    HTTPS. HTTPS to a matching host is terminated by the proxy with golem's CA, which
    boxes trust; all other HTTPS is tunnelled untouched.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Identifier, e.g. anthropic; also the plain-HTTP route.")
    host: str = Field(description=r"Regular expression of the host names, e.g. '^api\.x\.com$'.")
    auth: Literal["header", "basic"] = "header"
    header: str = Field("Authorization", description="Header that carries the credential.")
    env: str | None = Field(None, description="Box variable holding the sentinel (header).")
    username: str = Field("x-access-token", description="User name for basic auth.")
    from_env: str | None = Field(None, description="Host variable holding the real value.")
    from_file: Path | None = Field(None, description="Host file holding the real value.")
    value: SecretStr | None = Field(None, description="The real value itself.")
    upstream: str | None = Field(
        None,
        description="Base URL the plain-HTTP route calls, e.g. https://api.anthropic.com.",
    )
    base_url_env: str | None = Field(
        None,
        description="Box variable set to the plain-HTTP route, e.g. ANTHROPIC_BASE_URL "
        "(http://127.0.0.1:<proxy_port>/_golem/<name>); needs upstream.",
    )

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", value):
            raise ValueError(f"credential name {value!r}: use lower-case letters, digits, - and _")
        return value

    @field_validator("header")
    @classmethod
    def _header_is_a_token(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", value):
            raise ValueError(f"{value!r} is not an HTTP header name")
        return value

    @field_validator("host")
    @classmethod
    def _host_compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        return value

    @field_validator("env", "base_url_env", "from_env")
    @classmethod
    def _variable_names(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Credential:
        sources = [s for s in (self.from_env, self.from_file, self.value) if s is not None]
        if len(sources) != 1:
            raise ValueError(
                f"credential {self.name!r}: give exactly one of from_env, from_file or value"
            )
        if self.auth == "header" and self.env is None:
            raise ValueError(
                f"credential {self.name!r}: a header credential needs env, the box variable "
                "that carries its sentinel"
            )
        if self.base_url_env is not None and self.upstream is None:
            raise ValueError(f"credential {self.name!r}: base_url_env needs upstream")
        if self.upstream is not None:
            url = urlsplit(self.upstream)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"credential {self.name!r}: upstream must be an http(s) URL")
            if not self.matches(url.hostname):
                raise ValueError(
                    f"credential {self.name!r}: upstream host {url.hostname} does not match "
                    f"its host pattern {self.host!r}"
                )
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.username):
            raise ValueError(f"credential {self.name!r}: username {self.username!r} is not valid")
        return self

    def matches(self, host: str) -> bool:
        """Whether this credential applies to ``host``."""
        name = host.lower().rstrip(".")
        return len(name) <= MAX_HOST_NAME and re.search(self.host, name) is not None


RemoteScheme = Literal["https", "http", "ssh", "file"]
"""How a git remote is reached: ``file`` is a path on the host (or a file:// URL). git://
is not offered: it cannot be pinned to a checked address."""


def _https_only() -> list[RemoteScheme]:
    return ["https"]


class RemotePolicy(BaseModel):
    """Which git remotes the host may reach for a run (``server.policies.<role>.repos``).

    Checked where git connects: the scheme, the host name (``allow``/``deny`` regexes, as
    for a box's egress), the port, and every address the name resolves to (private,
    loopback, link-local and this host's own refused unless ``allow_cidrs`` lists them).
    Git is then pinned to the checked address and follows no redirect, so what a resolver
    or the remote answers later changes nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schemes: list[RemoteScheme] = Field(
        default_factory=_https_only, description="Schemes allowed: https, http, ssh, file."
    )
    allow: list[str] = Field(
        default_factory=lambda: [r".*"],
        description=r"Regular expressions of remote host names allowed, e.g. '^github\.com$'.",
    )
    deny: list[str] = Field(default_factory=list, description="Host names refused first.")
    allow_cidrs: list[str] = Field(
        default_factory=list, description="Address ranges allowed although private."
    )
    ports: list[int] = Field(default_factory=lambda: [443], description="Ports allowed.")
    git_errors: bool = Field(
        False,
        description="Show git's own error text on a failed clone, fetch or push (it can "
        "tell what answered at an address: keep it off for untrusted keys).",
    )

    @cached_property
    def egress(self) -> EgressPolicy:
        """The host and address checks, as the egress proxy makes them."""
        return EgressPolicy(
            allow=self.allow, deny=self.deny, allow_cidrs=self.allow_cidrs, ports=self.ports
        )

    @model_validator(mode="after")
    def _checks_compile(self) -> RemotePolicy:
        _ = self.egress  # the regexes, ranges and ports are EgressPolicy's to validate
        return self
