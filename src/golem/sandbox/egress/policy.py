"""Egress policy: which host names, addresses and ports a box may reach through the proxy.

Names are matched with regular expressions, deny before allow. Every address a name
resolves to is checked as well: private ranges, loopback, link-local, cloud metadata and
this host's own addresses are refused unless listed in ``allow_cidrs``. The proxy connects
to an address it checked, never to a name again, so a name that resolves differently on a
second lookup (DNS rebinding) gets nowhere.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ALWAYS_REFUSED", "Decision", "EgressPolicy", "host_addresses"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALWAYS_REFUSED: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",
        "240.0.0.0/4", "::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8",
        "fd00:ec2::254/128", "::ffff:0:0/96",
    )
)  # fmt: skip
"""Private, loopback, link-local (cloud metadata 169.254.169.254 among them), multicast,
reserved and IPv4-mapped ranges."""


@dataclass(frozen=True)
class Decision:
    """The proxy's verdict on one destination, with the rule that decided it."""

    allowed: bool
    rule: str


def host_addresses() -> frozenset[IPAddress]:
    """This host's own addresses (never reachable from a box unless allowed by CIDR)."""
    found: set[IPAddress] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(ipaddress.ip_address(str(info[4][0]).split("%")[0]))
    except OSError:
        pass
    return frozenset(found)


class EgressPolicy(BaseModel):
    """What a box in ``filtered`` network mode may reach."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[str] = Field(
        default_factory=list, description="Regular expressions of host names to allow."
    )
    deny: list[str] = Field(
        default_factory=list, description="Regular expressions of host names to refuse first."
    )
    allow_cidrs: list[str] = Field(
        default_factory=list,
        description="Address ranges allowed although private (an internal registry).",
    )
    ports: list[int] = Field(default_factory=lambda: [80, 443], description="Allowed ports.")

    @field_validator("allow", "deny")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return patterns

    @field_validator("allow_cidrs")
    @classmethod
    def _cidrs_parse(cls, cidrs: list[str]) -> list[str]:
        for cidr in cidrs:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ValueError(f"{cidr!r} is not an address range like 10.1.2.0/24") from None
        return cidrs

    @cached_property
    def _allowed_networks(self) -> tuple[IPNetwork, ...]:
        return tuple(ipaddress.ip_network(c, strict=False) for c in self.allow_cidrs)

    def check_name(self, host: str, port: int) -> Decision:
        """Decide on a host name (or literal) and port, before any lookup."""
        if port not in self.ports:
            return Decision(False, f"port {port} not in {self.ports}")
        name = host.lower().rstrip(".")
        for pattern in self.deny:
            if re.search(pattern, name):
                return Decision(False, f"deny {pattern}")
        for pattern in self.allow:
            if re.search(pattern, name):
                return Decision(True, f"allow {pattern}")
        if _literal(name) is not None and self._in_allowed_cidrs(_literal(name)):
            return Decision(True, "allow_cidrs")
        return Decision(False, "not in allow list")

    def check_address(self, address: IPAddress, own: frozenset[IPAddress]) -> Decision:
        """Decide on one resolved address."""
        if self._in_allowed_cidrs(address):
            return Decision(True, "allow_cidrs")
        for network in ALWAYS_REFUSED:
            if address in network:
                return Decision(False, f"address {address} in {network}")
        if address in own:
            return Decision(False, f"address {address} is this host's")
        return Decision(True, "public address")

    def _in_allowed_cidrs(self, address: IPAddress | None) -> bool:
        return address is not None and any(
            address.version == net.version and address in net for net in self._allowed_networks
        )


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
