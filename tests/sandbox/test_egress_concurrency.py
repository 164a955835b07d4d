"""A filtered box's way out serves a package manager that opens hundreds of connections at
once (npm, pnpm, cargo, pip's parallel downloads): each one is answered, none is dropped or
left waiting, on every backend. The upstream answers only once every request has arrived,
so all of them are open through the bridge and the proxy at the same time."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from golem.sandbox import Engine, ExecRequest
from golem.sandbox.egress.proxy import MAX_CONNECTIONS
from tests.conftest import QUICK_START_BACKENDS
from tests.sandbox.nethosts import ALLOWED_ADDRESS, NetHosts
from tests.sandbox.network_policy import config, policy  # noqa: F401 - the fixture, shared

CONNECTIONS = 300

CLIENT = """
import asyncio, os, sys
from urllib.parse import urlsplit

proxy = urlsplit(os.environ["http_proxy"])
port, count = int(sys.argv[1]), int(sys.argv[2])
target = f"allowed.test:{port}"


async def plain(i):
    reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port)
    writer.write(f"GET http://{target}/{i} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    return i, await reader.read(), writer


async def tunnelled(i):
    reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port)
    writer.write(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    established = await reader.readuntil(b"\\r\\n\\r\\n")
    assert b" 200 " in established, established
    writer.write(f"GET /{i} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    return i, await reader.read(), writer


async def main():
    calls = [plain(i) if i % 2 else tunnelled(i) for i in range(count)]
    answers = await asyncio.gather(*calls, return_exceptions=True)
    good = 0
    for answer in answers:
        if isinstance(answer, BaseException):
            print("failed:", repr(answer))
            continue
        i, data, writer = answer
        writer.close()
        if data.endswith(f"answer {i}".encode()):
            good += 1
        else:
            print("wrong:", i, data[-80:])
    print("answered", good)


asyncio.run(main())
"""


@pytest.fixture(params=QUICK_START_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def upstream() -> AsyncIterator[int]:
    """An HTTP server that holds every request until ``CONNECTIONS`` are open, then answers
    each with its own path."""
    waiting: list[tuple[bytes, asyncio.StreamWriter]] = []
    everyone = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ")[1].lstrip(b"/")
        waiting.append((path, writer))
        if len(waiting) == CONNECTIONS:
            everyone.set()
        await everyone.wait()
        body = b"answer " + path
        writer.write(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        writer.write(body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, ALLOWED_ADDRESS, 0, backlog=4 * CONNECTIONS)
    yield int(server.sockets[0].getsockname()[1])
    server.close()


async def test_hundreds_of_concurrent_requests_through_the_proxy_are_all_answered(
    engine: Engine, net: NetHosts, upstream: int
) -> None:
    rules = policy(net, ports=[*net.ports, upstream])
    spec = engine.spec(network="filtered", egress=rules, timeout=60)
    async with engine.session(spec) as box:
        done = await box.execute(
            ExecRequest(cmd=["python3", "-c", CLIENT, str(upstream), str(CONNECTIONS)])
        )
        assert done.stdout_text.splitlines()[-1:] == [f"answered {CONNECTIONS}"], (
            done.stdout_text[-2000:] + done.stderr_text[-2000:]
        )
        assert len([e for e in done.network if e.allowed]) == CONNECTIONS


FLOOD = """
import resource, select, socket, sys
total, refused_expected = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = {}
for _ in range(total):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect("/run/golem/egress.sock")
    held[sock.fileno()] = sock
poll = select.poll()
for fd in held:
    poll.register(fd, select.POLLIN)
refused = 0
while refused < refused_expected:  # the proxy ends those it refuses: they read as closed
    for fd, _ in poll.poll():
        poll.unregister(fd)
        held.pop(fd).close()
        refused += 1
answered = 0
for sock in held.values():
    sock.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    answered += sock.recv(100).startswith(b"HTTP/1.1 400")
print(answered, refused)
"""


async def test_a_box_that_bypasses_its_bridge_gets_no_more_than_its_share_of_the_proxy(
    engine: Engine, net: NetHosts
) -> None:
    """The bridge is the box's own code: the host-side proxy caps one box's connections
    itself, refusing the rest at once rather than spending the host's descriptors."""
    flood = MAX_CONNECTIONS + 100
    spec = engine.spec(network="filtered", egress=policy(net), timeout=60)
    async with engine.session(spec) as box:
        done = await box.execute(ExecRequest(cmd=["python3", "-c", FLOOD, str(flood), "100"]))
        assert done.stdout_text.split() == [str(MAX_CONNECTIONS), "100"], done.stderr_text
        after = await box.execute(f"curl -sS -m 20 http://allowed.test:{net.plain.port}/hello.txt")
        assert after.stdout_text == "hello from the allowed host\n", after.stderr_text


LIMIT_AFTER_ENGINE = """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
from golem.core import load_config
from golem.sandbox.network import EgressService
EgressService(load_config({}, files=[]))
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard, hard > 256)
"""


def test_the_engines_proxies_are_not_held_to_a_shells_open_files_limit() -> None:
    """Each box connection costs the proxy two descriptors in golem's own process."""
    done = subprocess.run(
        [sys.executable, "-c", LIMIT_AFTER_ENGINE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["True", "True"], done.stderr
