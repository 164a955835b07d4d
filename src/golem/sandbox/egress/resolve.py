"""Name resolution for the egress proxy: static names, then DNS (given servers, or the host's).

The proxy resolves each name once per connection and connects to an address it checked,
so what a resolver answers later (DNS rebinding) never matters.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.rdatatype
import dns.resolver

from golem.core.network import IPAddress, NetworkConfig, address_literal

__all__ = ["Resolver", "host_addresses", "make_resolver", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Turns a host name and port into addresses; an unknown name gives an empty list or an
OSError."""

DNS_TIMEOUT = 5.0


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's resolver (getaddrinfo), addresses without zone ids."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]).split("%")[0] for info in infos]


def _nameserver(spec: str) -> dns.nameserver.Do53Nameserver:
    """``10.0.0.53``, ``10.0.0.53:5353``, ``[fd00::53]:53`` or ``fd00::53``."""
    literal = address_literal(spec)
    if literal is not None:
        return dns.nameserver.Do53Nameserver(str(literal))
    host, _, port = spec.rpartition(":")
    address = address_literal(host)
    if address is None or not port.isdigit():
        raise ValueError(f"nameserver {spec!r} must be an address or address:port")
    return dns.nameserver.Do53Nameserver(str(address), port=int(port))


def dns_resolver(nameservers: Sequence[str]) -> Resolver:
    """A resolver that asks these DNS servers (A and AAAA), never the host's resolver."""
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = [_nameserver(spec) for spec in nameservers]
    resolver.lifetime = DNS_TIMEOUT
    resolver.cache = None  # every connection asks afresh; the proxy checks what it gets

    async def resolve(host: str, port: int) -> list[str]:
        found: list[str] = []
        for rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            try:
                answer = await resolver.resolve(host, rdtype, search=False)
            except (dns.resolver.NoAnswer, dns.resolver.NXDOMAIN):
                continue
            except dns.exception.DNSException as exc:
                raise OSError(f"DNS lookup of {host} failed: {exc}") from exc
            found += [str(record) for record in answer]
        return found

    return resolve


def make_resolver(config: NetworkConfig) -> Resolver:
    """Literals as themselves, ``config.hosts`` next, then DNS (``config.nameservers``, or
    the host's resolver when none are given)."""
    upstream = dns_resolver(config.nameservers) if config.nameservers else system_resolver
    static: Mapping[str, list[str]] = config.hosts

    async def resolve(host: str, port: int) -> list[str]:
        literal = address_literal(host)
        if literal is not None:
            return [str(literal)]
        name = host.lower().rstrip(".")
        if name in static:
            return list(static[name])
        return await upstream(name, port)

    return resolve


def host_addresses() -> frozenset[IPAddress]:
    """This host's own addresses (never reachable from a box unless allowed by CIDR)."""
    found: set[IPAddress] = set()
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None):
            found.add(ipaddress.ip_address(str(info[4][0]).split("%")[0]))
    except OSError:
        pass
    return frozenset(found)
