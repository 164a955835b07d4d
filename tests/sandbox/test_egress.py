"""The egress policy and proxy, against real servers on loopback (no box needed)."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core.network import EgressPolicy
from golem.sandbox.egress import EgressProxy, Resolver


def policy(**fields: object) -> EgressPolicy:
    return EgressPolicy.model_validate(fields)


def test_deny_wins_over_allow_and_unlisted_names_are_refused() -> None:
    rules = policy(allow=[r"\.example\.com$"], deny=[r"^evil\."], ports=[443])
    assert rules.check_name("api.example.com", 443).allowed
    assert rules.check_name("evil.example.com", 443).rule == r"deny ^evil\."
    assert rules.check_name("other.org", 443).rule == "not in allow list"
    assert not rules.check_name("api.example.com", 22).allowed


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "::1",
     "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1", "0.0.0.0"],  # noqa: S104
)  # fmt: skip
def test_private_loopback_link_local_and_metadata_addresses_are_refused(address: str) -> None:
    verdict = policy(allow=[".*"]).check_address(ipaddress.ip_address(address), frozenset())
    assert not verdict.allowed


def test_allow_cidrs_open_a_private_range_and_nothing_else() -> None:
    rules = policy(allow_cidrs=["10.9.0.0/16"])
    assert rules.check_address(ipaddress.ip_address("10.9.1.1"), frozenset()).allowed
    assert not rules.check_address(ipaddress.ip_address("10.8.1.1"), frozenset()).allowed


def test_this_hosts_own_addresses_are_refused() -> None:
    own = ipaddress.ip_address("93.184.216.34")
    assert not policy().check_address(own, frozenset({own})).allowed


def test_bad_patterns_and_ranges_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="not a regular expression"):
        policy(allow=["("])
    with pytest.raises(ValueError, match="not an address range"):
        policy(allow_cidrs=["10.0.0.0/99"])


@pytest.fixture
async def upstream() -> AsyncIterator[int]:
    """An HTTP-ish server on loopback: answers plain requests, echoes tunnelled bytes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await reader.read(65536)
        if first.startswith(b"GET "):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + b"|" + first)
        else:
            writer.write(b"echo:" + first)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    yield int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()


@pytest.fixture
async def proxy_for(tmp_path: Path) -> AsyncIterator[object]:
    proxies: list[EgressProxy] = []

    async def make(rules: EgressPolicy) -> tuple[EgressProxy, Path]:
        proxy = EgressProxy(rules)
        path = tmp_path / f"egress-{len(proxies)}.sock"
        await proxy.start(path)
        proxies.append(proxy)
        return proxy, path

    yield make
    for proxy in proxies:
        await proxy.close()


async def exchange(path: Path, request: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(request)
    await writer.drain()
    reply = await reader.read()
    writer.close()
    return reply


async def test_connect_tunnels_bytes_both_ways(proxy_for, upstream: int) -> None:  # type: ignore[no-untyped-def]
    proxy, path = await proxy_for(policy(allow_cidrs=["127.0.0.0/8"], ports=[upstream]))
    reply = await exchange(path, f"CONNECT 127.0.0.1:{upstream} HTTP/1.1\r\n\r\nping".encode())
    assert reply == b"HTTP/1.1 200 Connection established\r\n\r\necho:ping"
    assert proxy.log[0].bytes_up == 4
    assert proxy.log[0].bytes_down == len(b"echo:ping")


@pytest.mark.parametrize(
    ("target", "rules", "rule"),
    [
        ("denied.test:443", {"allow": [".*"], "deny": [r"^denied\."]}, r"deny ^denied\."),
        ("unlisted.test:443", {"allow": [r"^listed\.test$"]}, "not in allow list"),
        ("169.254.169.254:80", {"allow": [".*"]}, "address 169.254.169.254 in 169.254.0.0/16"),
        ("10.1.2.3:443", {"allow": [".*"]}, "address 10.1.2.3 in 10.0.0.0/8"),
        ("[::1]:443", {"allow": [".*"]}, "address ::1 in ::1/128"),
        ("example.test:22", {"allow": [".*"]}, "port 22 not in [80, 443]"),
    ],
)
async def test_refused_destinations_get_403_and_are_logged(
    proxy_for, target: str, rules: dict[str, object], rule: str
) -> None:  # type: ignore[no-untyped-def]
    proxy, path = await proxy_for(policy(**rules))
    reply = await exchange(path, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
    assert reply.startswith(b"HTTP/1.1 403 Forbidden")
    assert rule.encode() in reply
    assert [(e.allowed, e.rule) for e in proxy.log] == [(False, rule)]


async def through_proxy_with(
    resolver: Resolver, rules: EgressPolicy, socket: Path, request: bytes
) -> tuple[EgressProxy, bytes]:
    """One request through a proxy whose name lookups ``resolver`` answers."""
    proxy = EgressProxy(rules, resolver=resolver)
    await proxy.start(socket)
    try:
        return proxy, await exchange(socket, request)
    finally:
        await proxy.close()


async def test_every_address_of_a_name_must_pass(tmp_path: Path, upstream: int) -> None:
    async def split_answer(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "10.0.0.7"]  # one allowed by CIDR, one private

    rules = policy(allow=[r"^split\.test$"], allow_cidrs=["127.0.0.0/8"], ports=[upstream])
    proxy, reply = await through_proxy_with(
        split_answer, rules, tmp_path / "split.sock",
        f"CONNECT split.test:{upstream} HTTP/1.1\r\n\r\n".encode(),
    )  # fmt: skip
    assert reply.startswith(b"HTTP/1.1 403")
    assert proxy.log[0].rule == "address 10.0.0.7 in 10.0.0.0/8"


async def test_a_rebinding_name_reaches_only_the_address_that_was_checked(
    tmp_path: Path, upstream: int
) -> None:
    """The first answer passes; a second lookup would say 10.0.0.7. The proxy never asks
    twice: it connects to the address it checked."""
    answers = [["127.0.0.1"], ["10.0.0.7"]]
    lookups: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return answers[len(lookups) - 1]

    rules = policy(allow=[r"^rebind\.test$"], allow_cidrs=["127.0.0.0/8"], ports=[upstream])
    proxy, reply = await through_proxy_with(
        rebinding, rules, tmp_path / "rebind.sock",
        f"CONNECT rebind.test:{upstream} HTTP/1.1\r\n\r\nhi".encode(),
    )  # fmt: skip
    assert reply.endswith(b"echo:hi")  # reached the checked 127.0.0.1 upstream
    assert lookups == ["rebind.test"]
    assert proxy.log[0].address == "127.0.0.1"


async def test_malformed_and_non_proxy_requests_get_400(proxy_for) -> None:  # type: ignore[no-untyped-def]
    proxy, path = await proxy_for(policy(allow=[".*"]))
    assert (await exchange(path, b"NONSENSE\r\n\r\n")).startswith(b"HTTP/1.1 400")
    assert (await exchange(path, b"GET /local HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 400")
    assert [e.allowed for e in proxy.log] == [False, False]
