"""Filtered network from inside real boxes, on every backend: what gets through the egress
proxy, what is refused (and logged), and brokered credentials that never enter a box.

The hosts are the tests' own (tests/sandbox/nethosts.py): HTTP and HTTPS servers on
127.0.0.2 and 127.0.0.3 of this machine and a DNS server the proxy asks. A box reaches them
only through the proxy: inside a box, 127.0.0.0/8 is the box's own loopback.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from golem.core import NetworkEvent
from golem.sandbox import Box, Engine, ExecRequest, OutputEvent
from tests.conftest import (
    BOTH_BACKENDS,
    PRIVATE_PASSWORD,
    QUICK_START_BACKENDS,
    SHARED_LOOP,
    SYNC_ON_SHARED_LOOP,
)
from tests.sandbox.nethosts import NetHosts
from tests.sandbox.network_policy import (  # noqa: F401 - its fixtures
    SECRET,
    config,
    policy,
)
from tests.traces import traces_in_box

pytestmark = SHARED_LOOP


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="session")
async def box(engine: Engine, net: NetHosts) -> AsyncIterator[Box]:
    async with engine.session(engine.spec(network="filtered", egress=policy(net))) as box:
        await box.put_file("ca.pem", net.ca_file.read_bytes())
        yield box


def refusals(result_network: list[NetworkEvent]) -> list[tuple[str, str]]:
    return [(e.host, e.rule) for e in result_network if not e.allowed]


async def test_the_box_is_told_where_the_proxy_is_and_has_no_other_way_out(box: Box) -> None:
    result = await box.execute("env | sort | grep -i -E '^(https?|no)_proxy='")
    assert result.stdout_text.splitlines() == [
        "HTTPS_PROXY=http://127.0.0.1:3128",
        "HTTP_PROXY=http://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1,::1",
        "http_proxy=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "no_proxy=localhost,127.0.0.1,::1",
    ]
    routes = await box.execute("cat /proc/net/route | tail -n +2 | wc -l; cd /run/golem && ls")
    assert routes.stdout_text.split() == [
        "0",
        "ca-certificates.crt",
        "egress.sock",
        "golem-ca.pem",
        "proxy",
    ]


async def test_an_allowed_host_works_over_http_and_https_with_curl(box: Box, net: NetHosts) -> None:
    result = await box.execute(
        f"curl -sS -m 20 http://allowed.test:{net.plain.port}/hello.txt && "
        f"curl -sS -m 20 --cacert ca.pem https://allowed.test:{net.secure.port}/hello.txt"
    )
    assert result.stdout_text == "hello from the allowed host\n" * 2, result.stderr_text
    allowed = [e for e in result.network if e.allowed]
    assert [(e.host, e.method, e.address) for e in allowed] == [
        ("allowed.test", "GET", "127.0.0.2"),
        ("allowed.test", "CONNECT", "127.0.0.2"),
    ]
    assert all(e.bytes_up > 0 and e.bytes_down > 0 for e in allowed)


async def test_git_clones_over_http_and_https(box: Box, net: NetHosts) -> None:
    result = await box.execute(
        f"git clone -q http://allowed.test:{net.plain.port}/repo.git a && cat a/README.md && "
        f"GIT_SSL_CAINFO=$PWD/ca.pem git clone -q "
        f"https://allowed.test:{net.secure.port}/repo.git b && cat b/README.md"
    )
    assert result.stdout_text == "the repo repository\n" * 2, result.stderr_text


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_pip_downloads_from_a_local_index_over_http_and_https(
    box: Box, net: NetHosts
) -> None:
    pip = (
        "PIP_CONFIG_FILE=/dev/null python3 -m pip download -q --no-deps --disable-pip-version-check"
    )
    result = await box.execute(
        f"{pip} --trusted-host allowed.test "
        f"--index-url http://allowed.test:{net.plain.port}/simple -d one golemdemo && "
        f"REQUESTS_CA_BUNDLE=$PWD/ca.pem {pip} "
        f"--index-url https://allowed.test:{net.secure.port}/simple -d two golemdemo && "
        "echo one/* two/*"
    )
    assert result.exit_code == 0, result.stderr_text
    assert result.stdout_text.count("golemdemo-1.0-py3-none-any.whl") == 2


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_npm_reads_a_registry_through_the_proxy(box: Box, net: NetHosts) -> None:
    result = await box.execute(
        "npm view golemdemo version --no-update-notifier --cache /tmp/npm-cache "
        f"--registry http://allowed.test:{net.plain.port}/npm/"
    )
    assert result.stdout_text.strip() == "1.0.0", result.stderr_text
    assert [(e.host, e.allowed) for e in result.network] == [("allowed.test", True)]


async def test_python_urllib_goes_through_the_proxy_unchanged(box: Box, net: NetHosts) -> None:
    code = (
        "import urllib.request\n"
        f"print(urllib.request.urlopen('http://allowed.test:{net.plain.port}/hello.txt')"
        ".read().decode(), end='')\n"
    )
    result = await box.execute(ExecRequest(code=code, runtime="python"))
    assert result.stdout_text == "hello from the allowed host\n", result.stderr_text


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://denied.test:{plain}/hello.txt", r"deny ^denied\."),
        ("http://unlisted.test:{plain}/hello.txt", "not in allow list"),
        ("http://metadata.test:{plain}/", "address 169.254.169.254 in 169.254.0.0/16"),
        ("http://169.254.169.254:{plain}/latest/meta-data/", "not in allow list"),
        ("http://internal.test:{plain}/hello.txt", "address 127.0.0.3 in 127.0.0.0/8"),
        ("http://[2606:4700::1111]:{plain}/hello.txt", "not in allow list"),
        ("http://[fd00:ec2::254]:{plain}/", "not in allow list"),
        ("https://allowed.test:8443/", "port 8443 not in"),
        ("https://denied.test:{secure}/", r"deny ^denied\."),
        ("https://internal.test:{secure}/", "address 127.0.0.3 in 127.0.0.0/8"),
    ],
)  # fmt: skip
async def test_refused_destinations_are_refused_and_logged(
    box: Box, net: NetHosts, url: str, rule: str
) -> None:
    target = url.format(plain=net.plain.port, secure=net.secure.port)
    seen_before = len(net.internal.seen)
    result = await box.execute(f"curl -sS -m 20 -o /dev/null -w '%{{http_code}}' '{target}'")
    assert result.exit_code != 0 or result.stdout_text == "403"
    [(host, logged_rule)] = refusals(result.network)
    assert logged_rule.startswith(rule)
    assert host in target
    assert len(net.internal.seen) == seen_before


async def test_direct_connections_udp_and_dns_never_leave_the_box(box: Box, net: NetHosts) -> None:
    attempts = {
        "tcp_public": ("93.184.216.34", 80), "tcp_private": ("10.1.2.3", 80),
        "tcp_metadata": ("169.254.169.254", 80), "tcp_ipv6": ("2606:4700::1111", 80),
        "tcp_host_address": ("127.0.0.2", net.plain.port),
    }  # fmt: skip
    code = f"""
import json, socket
out = {{}}
for name, (host, port) in {attempts!r}.items():
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port)); out[name] = "connected"
    except OSError as exc:
        out[name] = type(exc).__name__
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("8.8.8.8", 53)); out["udp_public"] = "sent"
except OSError as exc:
    out["udp_public"] = type(exc).__name__
query = bytes.fromhex("abcd01000001000000000000") + b"\\x04leak\\x04test\\x00\\x00\\x01\\x00\\x01"
u.sendto(query, ("127.0.0.1", {net.dns.port}))
try:
    socket.getaddrinfo("allowed.test", 80); out["dns"] = "resolved"
except OSError as exc:
    out["dns"] = type(exc).__name__
print(json.dumps(out))
"""
    seen_before = len(net.plain.seen)
    result = await box.execute(ExecRequest(code=code, runtime="python"))
    outcome = json.loads(result.stdout_text)
    assert "connected" not in outcome.values(), outcome
    assert outcome["udp_public"] == "OSError"  # network unreachable
    assert outcome["dns"] == "gaierror"
    assert "leak.test" not in net.dns.queries  # the box's 127.0.0.1 is its own
    assert len(net.plain.seen) == seen_before
    assert result.network == []  # none of it reached the proxy


async def test_a_rebinding_name_never_reaches_its_second_address(box: Box, net: NetHosts) -> None:
    """rebind.test answers 127.0.0.2 and 127.0.0.3 in turn. Each request is resolved once
    and connected to the address that was checked, so the internal host is never reached."""
    seen_before = len(net.internal.seen)
    result = await box.execute(
        f"for i in 1 2 3 4; do curl -s -m 20 http://rebind.test:{net.plain.port}/hello.txt; done"
    )
    assert result.stdout_text.count("hello from the allowed host") == 2
    assert result.stdout_text.count("refused (address 127.0.0.3 in 127.0.0.0/8)") == 2
    assert "INTERNAL" not in result.stdout_text
    assert len(net.internal.seen) == seen_before
    assert [e.allowed for e in result.network].count(False) == 2


async def test_a_brokered_credential_reaches_the_upstream_but_never_the_box(
    box: Box, net: NetHosts
) -> None:
    result = await box.execute(
        'echo "token=$BROKERED_TOKEN"; '
        f'curl -sS -m 20 https://brokered.test:{net.secure.port}/echo -H "Authorization: Bearer '
        '$BROKERED_TOKEN"; echo; '
        'curl -sS -m 20 "$BROKERED_BASE_URL/echo?via=route" -H "Authorization: Bearer '
        '$BROKERED_TOKEN"; echo; '
        f'curl -sS -m 20 http://brokered.test:{net.plain.port}/echo -H "Authorization: Bearer '
        '$BROKERED_TOKEN"'
    )
    assert result.exit_code == 0, result.stderr_text
    lines = result.stdout_text.splitlines()
    assert lines[0].startswith("token=golem-sentinel-brokered-")
    upstream_saw = [s.headers.get("authorization") for s in net.secure.seen + net.plain.seen]
    assert upstream_saw.count(f"Bearer {SECRET}") >= 3
    echoed = [json.loads(line)["headers"]["authorization"] for line in lines[1:]]
    assert echoed == ["Bearer " + "*" * len(SECRET)] * 3  # masked by the proxy, same length
    assert SECRET not in result.stdout_text + result.stderr_text
    assert {e.brokered for e in result.network} == {"brokered"}


async def test_no_trace_of_a_brokered_value_is_in_the_box(box: Box, net: NetHosts) -> None:
    await box.execute(
        f'curl -sS -m 20 https://brokered.test:{net.secure.port}/echo -H "x-t: $BROKERED_TOKEN"'
    )
    assert await traces_in_box(box, SECRET) == []
    env = await box.execute("env")
    assert "BROKERED_TOKEN=golem-sentinel-" in env.stdout_text


async def test_git_over_https_gets_basic_auth_from_the_proxy(box: Box, net: NetHosts) -> None:
    """private.test has a basic-auth credential: git needs no credentials of its own. The
    same repository through a tunnel that is not brokered asks for them, and fails."""
    result = await box.execute(
        f"git clone -q https://private.test:{net.secure.port}/private/repo.git ok && "
        "cat ok/README.md; "
        f"GIT_TERMINAL_PROMPT=0 GIT_SSL_CAINFO=$PWD/ca.pem git clone -q "
        f"https://allowed.test:{net.secure.port}/private/repo.git refused; echo rc=$?"
    )
    assert result.stdout_text.splitlines() == ["the repo repository", "rc=128"], result.stderr_text
    assert PRIVATE_PASSWORD not in result.stdout_text + result.stderr_text


async def test_network_events_stream_with_the_output(box: Box, net: NetHosts) -> None:
    request = (
        f"curl -s -m 20 http://allowed.test:{net.plain.port}/hello.txt; "
        f"curl -s -m 20 http://denied.test:{net.plain.port}/"
    )
    events = [e async for e in box.stream(request)]
    kinds = [e.type for e in events]
    assert kinds.count("net") == 2
    assert kinds.index("net") < kinds.index("stdout")
    decisions = [e for e in events if isinstance(e, NetworkEvent)]
    assert [d.allowed for d in decisions] == [True, False]
    assert any(isinstance(e, OutputEvent) and "hello" in e.text for e in events)


async def test_a_pooled_box_gets_each_sessions_policy_and_an_empty_log(
    engine: Engine, net: NetHosts
) -> None:
    url = f"http://allowed.test:{net.plain.port}/hello.txt"
    async with engine.session(engine.spec(network="filtered", egress=policy(net))) as first:
        assert (await first.execute(f"curl -s -m 20 {url}")).stdout_text.startswith("hello")
        assert len(await first.network_log()) == 1
    strict = policy(net, allow=[r"^nothing\.test$"])
    async with engine.session(engine.spec(network="filtered", egress=strict)) as second:
        assert second.id == first.id  # the same box, wiped and handed out again
        result = await second.execute(f"curl -s -m 20 {url}")
        assert "refused (not in allow list)" in result.stdout_text
        assert [e.allowed for e in await second.network_log()] == [False]


async def test_filtered_boxes_without_a_policy_reach_nothing(engine: Engine, net: NetHosts) -> None:
    async with engine.session(engine.spec(network="filtered")) as box:
        result = await box.execute(f"curl -s -m 20 http://allowed.test:{net.plain.port}/")
    assert "refused" in result.stdout_text
    assert refusals(result.network) == [("allowed.test", f"port {net.plain.port} not in [80, 443]")]


@SYNC_ON_SHARED_LOOP
def test_the_test_hosts_serve_what_the_tests_expect(net: NetHosts, tmp_path: Path) -> None:
    """The tests above rely on the internal host being distinguishable and reachable from
    the host: check that directly, so a refusal seen from a box means a refusal."""
    import urllib.request

    page = urllib.request.urlopen(f"http://127.0.0.3:{net.internal.port}/hello.txt").read()
    assert page == b"INTERNAL SECRET PAGE\n"
