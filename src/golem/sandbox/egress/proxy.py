"""The host-side egress proxy: HTTP CONNECT and plain HTTP, decided by an EgressPolicy.

A box in ``filtered`` mode has no route out; its only way is this proxy, reached through a
unix socket. For each request the proxy checks the name, resolves it once, checks every
address, connects to a checked address, and logs the decision with the bytes moved.
No part of a request is ever handed to a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel

from golem.sandbox.egress.policy import Decision, EgressPolicy, host_addresses

__all__ = ["EgressProxy", "NetLogEntry", "Resolver", "system_resolver"]

MAX_HEAD = 64 * 1024
CHUNK = 64 * 1024
CONNECT_TIMEOUT = 10.0


Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Turns a host name and port into addresses; the proxy asks once per request."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's resolver (getaddrinfo), addresses without zone ids."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=1)  # SOCK_STREAM
    return [str(info[4][0]).split("%")[0] for info in infos]


class NetLogEntry(BaseModel):
    """One decision of the proxy."""

    time: float
    host: str
    port: int
    allowed: bool
    rule: str
    address: str | None = None
    bytes_up: int = 0
    bytes_down: int = 0


class _Refused(Exception):
    def __init__(self, status: int, decision: Decision, *, logged: bool = False) -> None:
        super().__init__(decision.rule)
        self.status = status
        self.decision = decision
        self.logged = logged


class EgressProxy:
    """Serves one box (or one engine): ``await proxy.start(path)``, ``await proxy.close()``."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        on_entry: Callable[[NetLogEntry], None] | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.policy = policy
        self._resolve = resolver or system_resolver
        self.log: list[NetLogEntry] = []
        self._on_entry = on_entry
        self._own = host_addresses()
        self._server: asyncio.AbstractServer | None = None

    async def start(self, socket_path: Path) -> None:
        """Listen on a unix socket."""
        self._server = await asyncio.start_unix_server(self._serve, path=str(socket_path))

    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on TCP (for the host side of tests and benchmarks); returns the port."""
        self._server = await asyncio.start_server(self._serve, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and drop open tunnels."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            await self._handle(head, reader, writer)
        except _Refused as refused:
            if not refused.logged:
                self._refuse_entry("?", 0, refused.status, refused.decision)
            await _refuse(writer, refused.status, refused.decision)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        method, target, rest = _request_line(head)
        if method == "CONNECT":
            host, port = _split_host_port(target, default=443)
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                raise self._refuse_entry("?", 0, 400, Decision(False, "not a proxy request"))
            host, port = url.hostname, url.port or 80
        entry = NetLogEntry(time=time.time(), host=host, port=port, allowed=False, rule="")
        address = await self._decide(entry)
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(address, port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError):
            raise _Refused(502, Decision(False, "upstream unreachable"), logged=True) from None
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream_writer.write(_origin_form(method, target, rest))
            entry.bytes_up += len(head)
        await _pipe_both(reader, writer, upstream_reader, upstream_writer, entry)

    async def _decide(self, entry: NetLogEntry) -> str:
        decision = self.policy.check_name(entry.host, entry.port)
        if not decision.allowed:
            raise self._refuse_entry(entry.host, entry.port, 403, decision, entry)
        try:
            addresses = [
                ipaddress.ip_address(a) for a in await self._resolve(entry.host, entry.port)
            ]
        except (OSError, ValueError):
            addresses = []
        if not addresses:
            raise self._refuse_entry(
                entry.host, entry.port, 502, Decision(False, "name does not resolve"), entry
            )
        for address in addresses:  # every address must pass: no split answers
            verdict = self.policy.check_address(address, self._own)
            if not verdict.allowed:
                raise self._refuse_entry(entry.host, entry.port, 403, verdict, entry)
        entry.allowed, entry.rule, entry.address = True, decision.rule, str(addresses[0])
        self._record(entry)
        return str(addresses[0])

    def _refuse_entry(
        self, host: str, port: int, status: int, decision: Decision,
        entry: NetLogEntry | None = None,
    ) -> _Refused:  # fmt: skip
        entry = entry or NetLogEntry(time=time.time(), host=host, port=port, allowed=False, rule="")
        entry.allowed, entry.rule = False, decision.rule
        self._record(entry)
        return _Refused(status, decision, logged=True)

    def _record(self, entry: NetLogEntry) -> None:
        self.log.append(entry)
        if self._on_entry is not None:
            self._on_entry(entry)


def _request_line(head: bytes) -> tuple[str, str, bytes]:
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _Refused(400, Decision(False, "malformed request"))
    return parts[0].upper(), parts[1], rest


def _split_host_port(target: str, default: int) -> tuple[str, int]:
    host, sep, port = target.rpartition(":")
    if not sep or "]" in port:
        return target.strip("[]"), default
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise _Refused(400, Decision(False, "malformed port")) from None


def _origin_form(method: str, target: str, rest: bytes) -> bytes:
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    headers = [
        line
        for line in rest.split(b"\r\n")
        if line and not line.lower().startswith((b"proxy-", b"connection:"))
    ]
    lines = [f"{method} {path} HTTP/1.1".encode(), *headers, b"Connection: close", b"", b""]
    return b"\r\n".join(lines)


async def _refuse(writer: asyncio.StreamWriter, status: int, decision: Decision) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"golem egress: refused ({decision.rule})\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _pipe_both(
    box_reader: asyncio.StreamReader,
    box_writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    entry: NetLogEntry,
) -> None:
    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(CHUNK):
                sink.write(data)
                await sink.drain()
                if up:
                    entry.bytes_up += len(data)
                else:
                    entry.bytes_down += len(data)
        with contextlib.suppress(Exception):
            if sink.can_write_eof():
                sink.write_eof()

    try:
        await asyncio.gather(pump(box_reader, up_writer, True), pump(up_reader, box_writer, False))
    finally:
        with contextlib.suppress(Exception):
            up_writer.close()
