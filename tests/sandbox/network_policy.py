"""The egress policy and configuration of the network tests (fixtures)."""

from __future__ import annotations

import secrets

import pytest

from golem.core import GolemConfig, load_config
from tests.conftest import PRIVATE_PASSWORD
from tests.sandbox.nethosts import PRIVATE_USER, NetHosts

SECRET = "golem-real-" + secrets.token_hex(16)


@pytest.fixture
def config(config: GolemConfig, net: NetHosts) -> GolemConfig:
    """The backend's config, with the proxy asking the test DNS server, trusting the test CA
    for brokered upstreams, and two brokered credentials."""
    data = config.model_dump(mode="json")
    data["engine"]["network"] = {
        "nameservers": [net.dns.address],
        "upstream_ca": str(net.ca_file),
    }
    data["credentials"] = [
        {
            "name": "brokered",
            "host": r"^brokered\.test$",
            "env": "BROKERED_TOKEN",
            "value": SECRET,
            "upstream": f"https://brokered.test:{net.secure.port}",
            "base_url_env": "BROKERED_BASE_URL",
        },
        {"name": "private", "host": r"^private\.test$", "auth": "basic",
         "username": PRIVATE_USER, "value": PRIVATE_PASSWORD},
    ]  # fmt: skip
    return load_config(data, files=[])


def policy(net: NetHosts, **changes: object) -> dict[str, object]:
    rules: dict[str, object] = {
        "allow": [r"^(allowed|brokered|private|internal|metadata|rebind)\.test$"],
        "deny": [r"^denied\."],
        "allow_cidrs": ["127.0.0.2/32"],
        "ports": net.ports,
    }
    return {**rules, **changes}
