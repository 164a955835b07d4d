"""The egress proxy from the host, with real clients (httpx, raw sockets) and the test hosts
of tests/sandbox/nethosts.py: per-request decisions, brokered credentials, the plain-HTTP
route, masking, byte counts, name resolution and credential settings."""

from __future__ import annotations

import asyncio
import gc
import json
import ssl
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import h11
import httpx
import pytest

from golem.core import ConfigError, Credential, EgressPolicy, NetworkConfig
from golem.sandbox.egress import (
    CredentialBroker,
    EgressCA,
    EgressProxy,
    make_resolver,
    read_credential_values,
    upstream_context,
)
from tests.conftest import PRIVATE_PASSWORD
from tests.sandbox.nethosts import PRIVATE_USER, NetHosts

SECRET = "real-value-0123456789abcdef"  # noqa: S105 - a test credential

MakeProxy = Callable[..., Awaitable[tuple[EgressProxy, int, CredentialBroker]]]


def rules(net: NetHosts, **changes: object) -> EgressPolicy:
    fields: dict[str, object] = {
        "allow": [r"^(allowed|brokered|private|internal)\.test$"],
        "deny": [r"^denied\."],
        "allow_cidrs": ["127.0.0.2/32"],
        "ports": net.ports,
    }
    return EgressPolicy.model_validate({**fields, **changes})


def credentials(net: NetHosts) -> list[Credential]:
    return [
        Credential(
            name="brokered", host=r"^brokered\.test$", env="TOKEN", value=SECRET,
            upstream=f"https://brokered.test:{net.secure.port}",
        ),
        Credential(name="private", host=r"^private\.test$", auth="basic",
                   username=PRIVATE_USER, value=PRIVATE_PASSWORD),
    ]  # fmt: skip


@pytest.fixture
async def make_proxy(net: NetHosts) -> AsyncIterator[MakeProxy]:
    made: list[tuple[EgressProxy, EgressCA]] = []

    async def make(
        policy: EgressPolicy | None = None, brokered: list[Credential] | None = None
    ) -> tuple[EgressProxy, int, CredentialBroker]:
        ca = EgressCA()
        proxy = EgressProxy(
            EgressPolicy(),
            resolver=make_resolver(NetworkConfig(nameservers=[net.dns.address])),
            ca=ca,
            upstream_tls=upstream_context(net.ca_file),
            own_addresses=frozenset(),
        )
        chosen = credentials(net) if brokered is None else brokered
        broker = CredentialBroker(chosen, read_credential_values(chosen))
        proxy.configure(policy or rules(net), broker)
        port = await proxy.start_tcp()
        made.append((proxy, ca))
        return proxy, port, broker

    yield make
    for proxy, ca in made:
        await proxy.close()
        ca.close()


def client(port: int, *cas: bytes | Path) -> httpx.AsyncClient:
    """httpx through the proxy, trusting the given CAs."""
    context = ssl.create_default_context()
    for ca in cas:
        if isinstance(ca, Path):
            context.load_verify_locations(cafile=str(ca))
        else:
            context.load_verify_locations(cadata=ca.decode())
    return httpx.AsyncClient(proxy=f"http://127.0.0.1:{port}", verify=context, timeout=20)


async def raw_exchange(port: int, requests: list[h11.Request]) -> list[h11.Response]:
    """Several requests on one kept-alive connection to the proxy; their responses."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    responses = []
    try:
        for request in requests:
            writer.write(conn.send(request) + conn.send(h11.EndOfMessage()))
            await writer.drain()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    responses.append(event)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
            if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                conn.start_next_cycle()
            else:
                break
    finally:
        writer.close()
    return responses


def get(url: str, host: str) -> h11.Request:
    return h11.Request(method="GET", target=url, headers=[("Host", host)])


async def test_plain_http_goes_upstream_in_origin_form_without_proxy_headers(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, _ = await make_proxy()
    async with client(port) as http:
        reply = await http.get(
            f"http://allowed.test:{net.plain.port}/echo?q=1",
            headers={"Proxy-Authorization": "Basic c2VjcmV0", "X-Kept": "yes"},
        )
    seen = net.plain.seen[-1]
    assert reply.status_code == 200
    assert seen.path == "/echo?q=1"
    assert "proxy-authorization" not in seen.headers
    assert seen.headers["x-kept"] == "yes"
    assert seen.headers["host"] == f"allowed.test:{net.plain.port}"
    [entry] = proxy.log
    assert (entry.host, entry.method, entry.allowed, entry.rule, entry.address) == (
        "allowed.test", "GET", True, r"allow ^(allowed|brokered|private|internal)\.test$",
        "127.0.0.2",
    )  # fmt: skip
    assert entry.bytes_down > len(reply.content)


async def test_a_plain_request_to_a_host_without_credentials_takes_its_connection(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    """Relayed raw after its head (at tunnel speed), so the upstream is asked to close and
    the client opens a new connection, decided anew, for its next request."""
    proxy, port, _ = await make_proxy()
    base = f"allowed.test:{net.plain.port}"
    responses = await raw_exchange(
        port, [get(f"http://{base}/hello.txt", base), get(f"http://{base}/hello.txt", base)]
    )
    assert [r.status_code for r in responses] == [200]
    assert (b"connection", b"close") in responses[0].headers
    assert net.plain.seen[-1].headers["connection"] == "close"
    assert len(proxy.log) == 1


async def test_each_request_of_a_kept_alive_brokered_connection_is_decided_on_its_own(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, _ = await make_proxy()
    responses = await raw_exchange(
        port,
        [
            get(f"http://brokered.test:{net.plain.port}/echo", "brokered.test"),
            get(f"http://allowed.test:{net.plain.port}/hello.txt", "allowed.test"),
            get(f"http://denied.test:{net.plain.port}/hello.txt", "denied.test"),
        ],
    )
    assert [r.status_code for r in responses] == [200, 200, 403]
    assert [(e.host, e.allowed, e.brokered) for e in proxy.log] == [
        ("brokered.test", True, "brokered"),
        ("allowed.test", True, None),
        ("denied.test", False, None),
    ]


async def test_a_brokered_header_is_swapped_in_only_for_its_own_host(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, broker = await make_proxy()
    sentinel = broker.box_env(3128)["TOKEN"]
    assert SECRET not in sentinel
    ca = proxy._ca.pem  # type: ignore[union-attr]
    async with client(port, ca, net.ca_file) as http:
        brokered = await http.get(
            f"https://brokered.test:{net.secure.port}/echo",
            headers={"Authorization": f"Bearer {sentinel}"},
        )
        elsewhere = await http.get(
            f"https://allowed.test:{net.secure.port}/echo",
            headers={"Authorization": f"Bearer {sentinel}"},
        )
    by_host = {s.headers["host"].split(":")[0]: s.headers for s in net.secure.seen[-2:]}
    assert by_host["brokered.test"]["authorization"] == f"Bearer {SECRET}"
    assert by_host["allowed.test"]["authorization"] == f"Bearer {sentinel}"  # untouched
    masked = "Bearer " + "*" * len(SECRET)
    assert brokered.json()["headers"]["authorization"] == masked
    assert brokered.headers["X-Echo-Authorization"] == masked
    assert SECRET not in brokered.text + elsewhere.text
    assert [(e.host, e.brokered) for e in proxy.log] == [
        ("brokered.test", "brokered"), ("allowed.test", None),
    ]  # fmt: skip


async def test_brokered_requests_ask_for_an_uncompressed_answer(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    """Fewer answers to decode before masking (an upstream that compresses anyway is
    decoded or refused: test_egress_encodings.py)."""
    proxy, port, _ = await make_proxy()
    async with client(port, proxy._ca.pem) as http:  # type: ignore[union-attr]
        await http.get(
            f"https://brokered.test:{net.secure.port}/echo",
            headers={"Accept-Encoding": "gzip, br"},
        )
    assert net.secure.seen[-1].headers["accept-encoding"] == "identity"


async def test_the_plain_http_route_calls_the_upstream_over_https(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, broker = await make_proxy()
    sentinel = broker.box_env(3128)["TOKEN"]
    async with httpx.AsyncClient(timeout=20) as http:  # straight to the proxy, as a base URL
        reply = await http.post(
            f"http://127.0.0.1:{port}/_golem/brokered/echo",
            headers={"Authorization": f"Bearer {sentinel}"},
            content=b"x" * 1000,
        )
    assert reply.json() == {"received": 1000, "headers": reply.json()["headers"]}
    seen = net.secure.seen[-1]
    assert (seen.method, seen.path, seen.headers["authorization"]) == (
        "POST", "/echo", f"Bearer {SECRET}",
    )  # fmt: skip
    assert seen.headers["host"] == f"brokered.test:{net.secure.port}"
    assert proxy.log[-1].brokered == "brokered"


async def test_an_unknown_route_and_a_non_proxy_request_are_refused_and_logged(
    make_proxy: MakeProxy,
) -> None:
    proxy, port, _ = await make_proxy()
    async with httpx.AsyncClient(timeout=20) as http:
        unknown = await http.get(f"http://127.0.0.1:{port}/_golem/nope/x")
        local = await http.get(f"http://127.0.0.1:{port}/etc/passwd")
    assert (unknown.status_code, local.status_code) == (400, 400)
    assert [e.rule for e in proxy.log] == [
        "no credential route 'nope'",
        "not a proxy request: use an absolute http:// URL",
    ]


async def test_basic_auth_is_set_for_its_host_and_replaces_what_the_client_sent(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, _ = await make_proxy()
    path = "/private/repo.git/info/refs"
    async with client(port, proxy._ca.pem, net.ca_file) as http:  # type: ignore[union-attr]
        brokered = await http.get(
            f"https://private.test:{net.secure.port}{path}", auth=("someone", "guess")
        )
        tunnelled = await http.get(f"https://allowed.test:{net.secure.port}{path}")
    assert (brokered.status_code, tunnelled.status_code) == (200, 401)
    assert PRIVATE_PASSWORD not in brokered.text


async def test_bytes_are_counted_as_they_move(make_proxy: MakeProxy, net: NetHosts) -> None:
    proxy, port, _ = await make_proxy()
    async with client(port, net.ca_file) as http:
        plain = await http.get(f"http://allowed.test:{net.plain.port}/big.bin")
        tunnelled = await http.get(f"https://allowed.test:{net.secure.port}/big.bin")
    assert len(plain.content) == len(tunnelled.content) == 5 * 1024 * 1024
    plain_entry, tunnel_entry = proxy.log
    assert plain_entry.bytes_down > 5 * 1024 * 1024
    assert tunnel_entry.bytes_down > 5 * 1024 * 1024  # TLS records on top
    assert 0 < plain_entry.bytes_up < 1024


async def test_a_new_session_closes_the_previous_sessions_tunnels(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    proxy, port, _ = await make_proxy()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"CONNECT allowed.test:{net.secure.port} HTTP/1.1\r\n\r\n".encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
    proxy.configure(rules(net), CredentialBroker([], {}))
    assert await reader.read() == b""  # the tunnel was closed
    assert proxy.log == []  # and the new session's log starts empty
    writer.close()


async def test_names_resolve_as_literals_static_hosts_then_dns(net: NetHosts) -> None:
    resolve = make_resolver(
        NetworkConfig(nameservers=[net.dns.address], hosts={"Registry.Internal": ["10.1.2.3"]})
    )
    assert await resolve("10.9.8.7", 80) == ["10.9.8.7"]
    assert await resolve("[fd00::1]", 80) == ["fd00::1"]
    assert await resolve("registry.internal.", 80) == ["10.1.2.3"]
    assert await resolve("allowed.test", 80) == ["127.0.0.2"]
    assert await resolve("nowhere.test", 80) == []
    assert "allowed.test" in net.dns.queries


def test_credential_values_come_from_env_file_or_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_TOKEN", "from-env")
    secret_file = tmp_path / "token"
    secret_file.write_text("from-file\n")
    given = [
        Credential(name="a", host="a", env="A", from_env="HOST_TOKEN"),
        Credential(name="b", host="b", env="B", from_file=secret_file),
        Credential(name="c", host="c", env="C", value="from-config"),
    ]
    assert read_credential_values(given) == {"a": "from-env", "b": "from-file", "c": "from-config"}
    monkeypatch.delenv("HOST_TOKEN")
    with pytest.raises(ConfigError, match="HOST_TOKEN is not set"):
        read_credential_values(given[:1])
    missing = [Credential(name="d", host="d", env="D", from_file=tmp_path / "none")]
    with pytest.raises(ConfigError, match="cannot read"):
        read_credential_values(missing)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"env": "T"}, "exactly one of from_env, from_file or value"),
        ({"value": "v"}, "needs env"),
        ({"env": "T", "value": "v", "base_url_env": "U"}, "base_url_env needs upstream"),
        ({"env": "T", "value": "v", "upstream": "https://other.org"}, "does not match"),
        ({"env": "T", "value": "v", "header": "Bad Header"}, "not an HTTP header name"),
        ({"env": "1T", "value": "v"}, "not an environment variable name"),
    ],
)
def test_credential_settings_are_checked(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Credential.model_validate({"name": "x", "host": r"^api\.x\.com$", **fields})


def test_a_proxy_refuses_credentials_it_cannot_terminate_tls_for() -> None:
    proxy = EgressProxy(EgressPolicy(), own_addresses=frozenset())
    broker = CredentialBroker([Credential(name="x", host="x", env="X", value="v")], {"x": "v"})
    with pytest.raises(ValueError, match="need a CA"):
        proxy.configure(EgressPolicy(), broker)


def test_the_echo_host_reflects_json(net: NetHosts) -> None:
    """The echo endpoint's shape, which the tests above rely on."""
    import urllib.request

    url = f"http://127.0.0.2:{net.plain.port}/echo"
    body = json.loads(urllib.request.urlopen(url).read())
    assert body["host"] == "plain"


def connections_to(port: int) -> list[str]:
    """The states (as /proc/net/tcp numbers them) of this namespace's TCP connections whose
    remote end is ``port``: the proxy's side of its connections to an upstream there."""
    states = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[2].rsplit(":", 1)[1], 16) == port:
            states.append(fields[3])
    return states


async def test_an_upstream_that_stops_reading_loses_its_connection_when_the_proxy_closes(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    """A box uploads more than a stalled upstream reads, then leaves: closing the proxy
    resets the upstream connection, its unsent bytes dropped (a graceful close would leave
    the kernel offering them to the upstream for minutes, or asyncio holding the socket)."""
    accepted = asyncio.Event()
    stalled: list[asyncio.StreamWriter] = []

    async def never_read(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stalled.append(writer)
        accepted.set()

    server = await asyncio.start_server(never_read, "127.0.0.2", 0)
    upstream_port = int(server.sockets[0].getsockname()[1])
    try:
        proxy, port, _ = await make_proxy(rules(net, ports=[*net.ports, upstream_port]))
        _, box = await asyncio.open_connection("127.0.0.1", port)
        box.write(
            f"POST http://private.test:{upstream_port}/upload HTTP/1.1\r\n"
            f"Host: private.test:{upstream_port}\r\nContent-Length: {64 << 20}\r\n\r\n".encode()
        )
        box.write(bytes(16 << 20))
        async with asyncio.timeout(30):
            await accepted.wait()
        box.transport.abort()
        assert connections_to(upstream_port) != []
        await proxy.close()
        assert connections_to(upstream_port) == []
    finally:
        for held in stalled:
            held.transport.abort()
        server.close()
        await server.wait_closed()


async def test_a_kept_alive_upstream_is_closed_politely_when_its_box_leaves(
    make_proxy: MakeProxy, net: NetHosts
) -> None:
    """After whole exchanges the upstream sees the connection end, not a reset."""
    ended: asyncio.Future[bytes | str] = asyncio.get_running_loop().create_future()

    async def answer_then_wait(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        try:
            ended.set_result(await reader.read())
        except ConnectionResetError as reset:
            ended.set_result(repr(reset))
        writer.close()

    server = await asyncio.start_server(answer_then_wait, "127.0.0.2", 0)
    upstream_port = int(server.sockets[0].getsockname()[1])
    try:
        _, port, _ = await make_proxy(rules(net, ports=[*net.ports, upstream_port]))
        [answer] = await raw_exchange(
            port, [get(f"http://private.test:{upstream_port}/", f"private.test:{upstream_port}")]
        )
        assert answer.status_code == 200
        async with asyncio.timeout(30):
            assert await ended == b""
    finally:
        server.close()
        await server.wait_closed()


def test_closing_the_proxy_closes_its_upstream_sockets_before_it_returns(net: NetHosts) -> None:
    """A brokered HTTPS upstream ends with TLS's close_notify exchange; an event loop that
    stops right after the proxy closes (a CLI run's, a test's) must find no socket left
    to close, or it leaks."""

    async def exchange_then_close() -> int:
        ca = EgressCA()
        proxy = EgressProxy(
            rules(net),
            resolver=make_resolver(NetworkConfig(nameservers=[net.dns.address])),
            ca=ca,
            upstream_tls=upstream_context(net.ca_file),
            own_addresses=frozenset(),
        )
        chosen = credentials(net)
        proxy.configure(rules(net), CredentialBroker(chosen, read_credential_values(chosen)))
        port = await proxy.start_tcp()
        try:
            async with client(port, ca.pem, net.ca_file) as http:
                reply = await http.get(f"https://brokered.test:{net.secure.port}/echo")
                await proxy.close()  # the box's connection and its upstream still open
        finally:
            await proxy.close()
            ca.close()
        return reply.status_code

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert asyncio.run(exchange_then_close()) == 200
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
