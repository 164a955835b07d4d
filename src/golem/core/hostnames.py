"""Host names in policies: an operator's regular expressions, a repository's plain names.

An operator (golem.toml) is trusted with regular expressions (``HostPatterns``); what a
repository names (its ``.golem.toml``, or detection) is data: host names or ``*.suffix``
globs (``HostNames``), made into escaped, anchored patterns only where a policy is built
(``host_name_patterns``), so that a repository can neither hang the proxy with a
pathological pattern nor match more than the names it wrote.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["MAX_HOST_NAME", "HostNames", "HostPatterns", "host_name_patterns"]


def _compiled(patterns: list[str]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return patterns


HostPatterns = Annotated[list[str], AfterValidator(_compiled)]
"""Regular expressions of host names (an allow or deny list), each checked to compile:
the operator's (trusted); a repository names hosts as ``HostNames``."""

MAX_HOST_NAME = 253
"""The longest DNS name; a longer host is refused before any pattern sees it."""
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def _host_names(names: list[str]) -> list[str]:
    return [_host_name(name) for name in names]


def _host_name(name: str) -> str:
    normal = name.strip().lower().rstrip(".")
    wildcard = normal.startswith("*.")
    labels = (normal[2:] if wildcard else normal).split(".")
    if len(normal) > MAX_HOST_NAME or not all(_LABEL.match(label) for label in labels):
        raise ValueError(
            f"{name!r} is not a host name (like pypi.org) nor a *.suffix glob (like "
            "*.corp.example): letters, digits and - in dot-separated labels, a * only as "
            "the whole leftmost label, no regular expression"
        )
    if labels[-1].isdigit():
        raise ValueError(f"{name!r} is an address, not a host name; name the registry's host")
    if wildcard and len(labels) < 2:
        raise ValueError(
            f"{name!r} allows too much: a wildcard needs two labels after it "
            "(*.corp.example, not *.com or *)"
        )
    return normal


HostNames = Annotated[list[str], AfterValidator(_host_names)]
"""Host names (``pypi.org``) or ``*.suffix`` globs (``*.corp.example``: any name below
it), never a regex: what a repository names. ``host_name_patterns`` turns them into the
anchored patterns of an egress policy."""


def host_name_patterns(names: list[str]) -> list[str]:
    """Anchored, escaped patterns that match exactly ``names`` (checked ``HostNames``)."""
    patterns: list[str] = []
    for name in _host_names(names):
        if name.startswith("*."):
            patterns.append(r"^(?:[a-z0-9-]+\.)+" + re.escape(name[2:]) + "$")
        else:
            patterns.append("^" + re.escape(name) + "$")
    return patterns
