"""Filtered network: the host-side egress proxy, its resolver, TLS and credential broker.

Each name is imported from its module when first asked for: a process that only reads
credential values (a run's secrets) does not load the proxy's DNS, TLS and HTTP parsing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golem.sandbox.egress.broker import (
        ROUTE_PREFIX,
        CredentialBroker,
        read_credential_values,
    )
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

_MODULES = {
    "ROUTE_PREFIX": "broker",
    "CredentialBroker": "broker",
    "read_credential_values": "broker",
    "EgressProxy": "proxy",
    "Resolver": "resolve",
    "host_addresses": "resolve",
    "make_resolver": "resolve",
    "EgressCA": "tls",
    "upstream_context": "tls",
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
