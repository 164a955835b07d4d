"""A streamable-HTTP MCP server, called from the host: only when the run's egress policy
allows its host (the policy's own matcher, as for git remotes), with its brokered
credential in its header (the value read on the host, never given to the box)."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from golem.core.errors import ConfigError, ToolshedError
from golem.core.masking import basic_auth
from golem.core.network import Credential, EgressPolicy, NetworkConfig
from golem.core.toolshed_config import McpServer
from golem.sandbox.egress import read_credential_values
from golem.sandbox.egress.resolve import host_addresses, make_resolver

__all__ = ["HttpAccess", "check_egress", "http_access", "http_transport"]


@dataclass(frozen=True)
class HttpAccess:
    """The headers a server's requests carry, and the secret values among them (masked
    wherever the server's answers go)."""

    headers: dict[str, str]
    secrets: tuple[str, ...]


def http_access(server: McpServer, credentials: Sequence[Credential]) -> HttpAccess:
    """The server's credential header, when it names one whose host pattern matches the
    url's host; ConfigError otherwise."""
    if server.credential is None:
        return HttpAccess({}, ())
    credential = next((c for c in credentials if c.name == server.credential), None)
    if credential is None:
        raise ConfigError(
            f"toolshed server {server.name!r}: credential {server.credential!r} is not in "
            "[[credentials]]; add it there"
        )
    host = urlsplit(server.url or "").hostname or ""
    if not credential.matches(host):
        raise ConfigError(
            f"toolshed server {server.name!r}: credential {credential.name!r} is for hosts "
            f"matching {credential.host!r}, not {host}; golem sends a credential only to its "
            "own hosts"
        )
    [value] = read_credential_values([credential]).values()
    if credential.auth == "basic":
        token = basic_auth(credential.username, value)
        return HttpAccess({"Authorization": f"Basic {token}"}, (value, token))
    sent = f"{server.scheme} {value}" if server.scheme else value
    return HttpAccess({credential.header: sent}, (value, sent))


async def check_egress(server: McpServer, policy: EgressPolicy, network: NetworkConfig) -> None:
    """ToolshedError unless the run's egress policy allows the url's host and port, and
    every address it resolves to."""
    parts = urlsplit(server.url or "")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    refused = (
        f"toolshed server {server.name!r} ({server.url}) is refused by the run's egress policy"
    )
    decision = policy.check_name(host, port)
    if not decision.allowed:
        raise ToolshedError(
            f"{refused}: {decision.rule}; allow its host (and port) in "
            "[engine.defaults.egress] or the blueprint's box.egress"
        )
    try:
        answers = await make_resolver(network)(host, port)
        addresses = [ipaddress.ip_address(answer) for answer in answers]
    except (OSError, ValueError):
        addresses = []
    if not addresses:
        raise ToolshedError(f"toolshed server {server.name!r}: {host} does not resolve")
    own = host_addresses()
    for address in addresses:
        verdict = policy.check_address(address, own)
        if not verdict.allowed:
            raise ToolshedError(
                f"{refused}: {host} resolves to a refused address ({verdict.rule}); list it "
                "in the egress policy's allow_cidrs if it is meant"
            )


@asynccontextmanager
async def http_transport(server: McpServer, access: HttpAccess) -> AsyncIterator[TransportStreams]:
    """The SDK's streamable-HTTP transport to ``server``, its requests carrying
    ``access``'s headers."""
    assert server.url is not None
    timeout = httpx2.Timeout(server.connect_timeout, read=server.call_timeout)
    async with (
        create_mcp_http_client(headers=access.headers, timeout=timeout) as client,
        streamable_http_client(server.url, http_client=client) as streams,
    ):
        yield streams
