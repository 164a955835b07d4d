"""The egress proxy's cost beside its floor (no proxy), measured in one run from the host.

    .venv/bin/python bench/network.py [--size-mb 100] [--downloads 5] [--requests 1000] [--json]

Three processes, as in a real run: an upstream server (HTTP and HTTPS on 127.0.0.2, a body
of ``--size-mb`` MB, and a small one), golem's EgressProxy (as the engine runs it, on TCP so
the client can reach it without a box), and this client, which times with perf_counter:

* throughput of a ``--size-mb`` MB download, ``--downloads`` times each, interleaved:
  floor ``direct http``; golem ``plain http via proxy`` (relayed per request with h11) and
  golem ``https tunnel via proxy`` beside floor ``direct https`` (CONNECT, bytes untouched);
* latency of ``--requests`` small HTTPS requests, each on a new connection (TCP, TLS
  handshake, GET, read), interleaved: floor ``direct`` vs golem ``via proxy`` (CONNECT).

Targets: throughput via the proxy >= 0.8x direct; added p50 latency <= 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import ssl
import statistics
import sys
import tempfile
import time
from typing import Any

import trustme

from golem.core import EgressPolicy
from golem.sandbox.egress import EgressProxy

ADDRESS = "127.0.0.2"
SMALL = b"ok\n"
THROUGHPUT_TARGET = 0.8
LATENCY_TARGET_MS = 1.0
RECV = 1 << 20


# Upstream -----------------------------------------------------------------------------


def serve_upstream(size: int, cert_dir: str, ports: Any) -> None:
    """HTTP and HTTPS servers: /big answers ``size`` bytes, anything else a few."""
    body = bytes(range(256)) * (size // 256)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{cert_dir}/cert.pem", f"{cert_dir}/key.pem")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                payload = body if head.startswith(b"GET /big") else SMALL
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload))
                writer.write(payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        plain = await asyncio.start_server(handle, ADDRESS, 0)
        secure = await asyncio.start_server(handle, ADDRESS, 0, ssl=context)
        ports.put((plain.sockets[0].getsockname()[1], secure.sockets[0].getsockname()[1]))
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_proxy(upstream_ports: tuple[int, int], ports: Any) -> None:
    """golem's proxy, allowing the upstream's address and ports."""
    policy = EgressPolicy(allow_cidrs=[f"{ADDRESS}/32"], ports=list(upstream_ports))

    async def main() -> None:
        proxy = EgressProxy(policy, own_addresses=frozenset())
        ports.put(await proxy.start_tcp())
        await asyncio.Event().wait()

    asyncio.run(main())


# Client -------------------------------------------------------------------------------


def _connect(proxy: int | None, port: int) -> socket.socket:
    if proxy is None:
        return socket.create_connection((ADDRESS, port))
    sock = socket.create_connection(("127.0.0.1", proxy))
    sock.sendall(f"CONNECT {ADDRESS}:{port} HTTP/1.1\r\n\r\n".encode())
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200"), reply
    return sock


def _read_response(read: Any) -> int:
    """Read one response with a Content-Length; returns the body's size."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += read(RECV)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    received = len(rest)
    buffer = bytearray(RECV)
    while received < length:
        count = read(buffer) if isinstance(read, _Into) else len(read(RECV))
        if not count:
            raise ConnectionError("the connection closed early")
        received += count
    return length


class _Into:
    """recv_into for the plain socket path (no copy per chunk)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def __call__(self, target: Any) -> Any:
        if isinstance(target, int):
            return self.sock.recv(target)
        return self.sock.recv_into(target)


def download(kind: str, ports: dict[str, int], context: ssl.SSLContext) -> tuple[float, int]:
    """One /big download; returns (seconds, bytes)."""
    start = time.perf_counter()
    if kind == "direct http":
        sock = socket.create_connection((ADDRESS, ports["http"]))
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        size = _read_response(_Into(sock))
    elif kind == "http tunnel via proxy":
        sock = _connect(ports["proxy"], ports["http"])
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        size = _read_response(_Into(sock))
    elif kind == "plain http via proxy":
        sock = socket.create_connection(("127.0.0.1", ports["proxy"]))
        url = f"http://{ADDRESS}:{ports['http']}/big"
        sock.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        size = _read_response(_Into(sock))
    else:
        proxy = ports["proxy"] if kind == "https tunnel via proxy" else None
        raw = _connect(proxy, ports["https"])
        sock = context.wrap_socket(raw, server_hostname="upstream.test")
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        size = _read_response(sock.recv)
    sock.close()
    return time.perf_counter() - start, size


def small_request(proxy: int | None, port: int, context: ssl.SSLContext) -> float:
    """A new connection, TLS handshake, GET and the answer; returns seconds."""
    start = time.perf_counter()
    raw = _connect(proxy, port)
    sock = context.wrap_socket(raw, server_hostname="upstream.test")
    sock.sendall(b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
    _read_response(sock.recv)
    sock.close()
    return time.perf_counter() - start


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def run(size_mb: int, downloads: int, requests: int) -> dict[str, Any]:
    ca = trustme.CA()
    with tempfile.TemporaryDirectory() as cert_dir:
        leaf = ca.issue_cert("upstream.test")
        leaf.private_key_pem.write_to_path(f"{cert_dir}/key.pem")
        leaf.cert_chain_pems[0].write_to_path(f"{cert_dir}/cert.pem")
        context = ssl.create_default_context()
        ca.configure_trust(context)
        queue: Any = multiprocessing.Queue()
        upstream = multiprocessing.Process(
            target=serve_upstream, args=(size_mb * 1024 * 1024, cert_dir, queue), daemon=True
        )
        upstream.start()
        http, https = queue.get(timeout=30)
        proxy = multiprocessing.Process(
            target=serve_proxy, args=((http, https), queue), daemon=True
        )
        proxy.start()
        ports = {"http": http, "https": https, "proxy": queue.get(timeout=30)}
        try:
            return measure(ports, context, downloads, requests)
        finally:
            for process in (proxy, upstream):
                process.kill()


def measure(
    ports: dict[str, int], context: ssl.SSLContext, downloads: int, requests: int
) -> dict[str, Any]:
    kinds = [
        "direct http", "plain http via proxy", "http tunnel via proxy", "direct https",
        "https tunnel via proxy",
    ]  # fmt: skip
    speeds: dict[str, list[float]] = {kind: [] for kind in kinds}
    for kind in kinds:  # warm-up
        download(kind, ports, context)
    for _ in range(downloads):
        for kind in kinds:
            seconds, size = download(kind, ports, context)
            speeds[kind].append(size / seconds / 1e6)
    latency: dict[str, list[float]] = {"direct": [], "via proxy": []}
    for _ in range(20):
        small_request(None, ports["https"], context)
        small_request(ports["proxy"], ports["https"], context)
    for _ in range(requests):
        latency["direct"].append(small_request(None, ports["https"], context) * 1000)
        latency["via proxy"].append(small_request(ports["proxy"], ports["https"], context) * 1000)
    throughput = {kind: statistics.median(values) for kind, values in speeds.items()}
    return {
        "throughput_mb_s": throughput,
        "throughput_ratio": {
            "plain http": throughput["plain http via proxy"] / throughput["direct http"],
            "http tunnel": throughput["http tunnel via proxy"] / throughput["direct http"],
            "https tunnel": throughput["https tunnel via proxy"] / throughput["direct https"],
        },
        "latency_ms": {
            kind: {"p50": statistics.median(v), "p99": percentile(v, 99)}
            for kind, v in latency.items()
        },
        "added_p50_ms": statistics.median(latency["via proxy"])
        - statistics.median(latency["direct"]),
        "downloads": downloads,
        "requests": requests,
    }


def print_report(report: dict[str, Any], size_mb: int) -> None:
    print(f"{size_mb} MB download, median of {report['downloads']} (MB/s):")
    for kind, value in report["throughput_mb_s"].items():
        print(f"  {kind:<24} {value:8.0f}")
    for kind, ratio in report["throughput_ratio"].items():
        verdict = "met" if ratio >= THROUGHPUT_TARGET else "NOT met"
        print(f"  ratio {kind:<18} {ratio:8.2f}x  (target >= {THROUGHPUT_TARGET}x: {verdict})")
    print(f"{report['requests']} small HTTPS requests, new connection each (ms):")
    for kind, stats in report["latency_ms"].items():
        print(f"  {kind:<24} p50 {stats['p50']:6.2f}  p99 {stats['p99']:6.2f}")
    added = report["added_p50_ms"]
    verdict = "met" if added <= LATENCY_TARGET_MS else "NOT met"
    print(f"  added p50 {added:.2f} ms  (target <= {LATENCY_TARGET_MS} ms: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--downloads", type=int, default=5)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(args.size_mb, args.downloads, args.requests)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report, args.size_mb)


if __name__ == "__main__":
    main()
