"""Filtered network: the host-side egress proxy, its resolver, TLS and credential broker."""

from golem.sandbox.egress.broker import ROUTE_PREFIX, CredentialBroker, read_credential_values
from golem.sandbox.egress.proxy import EgressProxy
from golem.sandbox.egress.resolve import Resolver, host_addresses, make_resolver
from golem.sandbox.egress.tls import EgressCA, upstream_context

__all__ = [
    "ROUTE_PREFIX",
    "CredentialBroker",
    "EgressCA",
    "EgressProxy",
    "Resolver",
    "host_addresses",
    "make_resolver",
    "read_credential_values",
    "upstream_context",
]
