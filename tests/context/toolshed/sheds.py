"""Configurations naming toolshed servers, and the egress a box needs to reach one."""

from __future__ import annotations

from typing import Any

from golem.core import GolemConfig, load_config


def shed_config(config: GolemConfig, **servers: dict[str, Any]) -> GolemConfig:
    """``config`` with ``servers`` (by name) as its toolshed's."""
    data = config.model_dump(mode="json", exclude_unset=True)
    data["toolshed"] = {"servers": [{"name": name, **s} for name, s in servers.items()]}
    return load_config(data, files=[])


TOKEN = "mcp-token-0b6d2f9e4c1a"  # noqa: S105 - a test value
"""The credential ``http_config``'s server is brokered (``tracker``)."""


def http_config(config: GolemConfig, url: str, **server: Any) -> GolemConfig:
    """``config`` with one toolshed server ``every`` at ``url``, and the credential
    ``tracker`` (``TOKEN``) for 127.0.0.1."""
    data = config.model_dump(mode="json", exclude_unset=True)
    data["credentials"] = [
        {"name": "tracker", "host": r"^127\.0\.0\.1$", "env": "TRACKER_TOKEN", "value": TOKEN}
    ]
    data["toolshed"] = {"servers": [{"name": "every", "url": url, **server}]}
    return load_config(data, files=[])


def allowing(port: int) -> dict[str, Any]:
    """A box's settings letting it reach 127.0.0.1:``port``."""
    return {"egress": {"allow_cidrs": ["127.0.0.1/32"], "ports": [port]}}
