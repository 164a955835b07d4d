"""Filtered network: the egress policy and the host-side proxy that enforces it."""

from golem.sandbox.egress.policy import ALWAYS_REFUSED, Decision, EgressPolicy
from golem.sandbox.egress.proxy import EgressProxy, NetLogEntry

__all__ = ["ALWAYS_REFUSED", "Decision", "EgressPolicy", "EgressProxy", "NetLogEntry"]
