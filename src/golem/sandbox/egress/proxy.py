"""The host-side egress proxy of a ``filtered`` box, decided by an EgressPolicy.

A box in ``filtered`` mode has no route out; its only way is this proxy, reached through a
unix socket mounted into the box. ``CONNECT`` tunnels bytes untouched, except to hosts a
brokered credential applies to: those tunnels are terminated with golem's CA so the
credential can be put in. Plain-HTTP requests (absolute form, or the ``/_golem/<name>``
route of a credential) are relayed one by one, each decided on its own. For every
destination the proxy checks the name, resolves it once, checks every address, connects
to an address it checked, and logs the decision with the bytes moved. No part of a request
is ever handed to a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import ssl
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import h11

from golem.core.errors import EgressRefused
from golem.core.events import EventSink, NetworkEvent
from golem.core.network import EgressPolicy, IPAddress, NetworkConfig
from golem.sandbox.egress.broker import ROUTE_PREFIX, Brokered, CredentialBroker
from golem.sandbox.egress.http import (
    HOP_BY_HOP,
    HttpSide,
    Route,
    Traffic,
    Upstream,
    end_stream,
    ready_upstream,
    relay,
    reset_stream,
    send_error,
)
from golem.sandbox.egress.log import Logged
from golem.sandbox.egress.resolve import Resolver, host_addresses, make_resolver
from golem.sandbox.egress.sockets import open_socket, refuse_raw, take_socket
from golem.sandbox.egress.splice import splice_tunnel
from golem.sandbox.egress.tls import EgressCA

__all__ = ["EgressProxy"]

MAX_HEAD = 64 * 1024
MAX_CONNECTIONS = 1024
"""Connections one box may hold open at once (twice what its bridge joins): a box that
bypasses its bridge for more is refused at once, before it costs the host descriptors."""
BACKLOG = 1024
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


class EgressProxy:
    """Serves one box: ``await proxy.start(path)``; ``configure`` per session; ``close``."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        resolver: Resolver | None = None,
        ca: EgressCA | None = None,
        upstream_tls: ssl.SSLContext | None = None,
        own_addresses: frozenset[IPAddress] | None = None,
    ) -> None:
        self.policy = policy
        self.broker = CredentialBroker([], {})
        self._resolve = resolver or make_resolver(NetworkConfig())
        self._ca = ca
        self._upstream_tls = upstream_tls or ssl.create_default_context()
        self._own = host_addresses() if own_addresses is None else own_addresses
        self._log: list[Logged] = []
        self._listeners: list[EventSink[NetworkEvent]] = []
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tunnels: set[socket.socket] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    def configure(self, policy: EgressPolicy, broker: CredentialBroker) -> None:
        """Start a new session: its policy and credentials, an empty log, and no
        connection of the previous session left open."""
        if broker and self._ca is None:
            raise ValueError("brokered credentials need a CA to terminate TLS with")
        self.drop_connections()
        self.policy, self.broker = policy, broker
        self._log = []

    @property
    def log(self) -> list[NetworkEvent]:
        """This session's decisions, with the bytes moved so far."""
        return [logged.snapshot() for logged in self._log]

    def current(self, event: NetworkEvent) -> NetworkEvent:
        """The log's entry for ``event`` as it stands now (its bytes counted so far)."""
        if 0 <= event.index < len(self._log):
            logged = self._log[event.index]
            if logged.event.time == event.time and logged.event.host == event.host:
                return logged.snapshot()
        return event

    def subscribe(self, listener: EventSink[NetworkEvent]) -> Callable[[], None]:
        """Call ``listener`` with every logged decision from now on; returns the undo."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def start(self, socket_path: Path) -> None:
        """Listen on a unix socket."""
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(socket_path), limit=MAX_HEAD, backlog=BACKLOG
        )

    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on TCP (the host side of tests and benchmarks); returns the port."""
        self._server = await asyncio.start_server(
            self._serve, host, port, limit=MAX_HEAD, backlog=BACKLOG
        )
        return int(self._server.sockets[0].getsockname()[1])

    def drop_connections(self) -> None:
        """Reset every open connection (their handlers wait until the sockets are gone)."""
        for writer in list(self._open):
            with contextlib.suppress(Exception):
                reset_stream(writer)
        self._open.clear()
        for tunnel in list(self._tunnels):  # their handlers see the end and close them
            with contextlib.suppress(OSError):
                tunnel.shutdown(socket.SHUT_RDWR)

    async def close(self) -> None:
        """Stop listening, drop open connections and end their handlers."""
        if self._server is not None:
            self._server.close()
            self.drop_connections()
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _record(self, entry: NetworkEvent) -> Traffic:
        """Log a decision as it is made; the returned counter keeps its bytes."""
        logged = Logged(entry.model_copy(update={"index": len(self._log)}), Traffic())
        self._log.append(logged)
        for listener in list(self._listeners):
            listener(logged.event)
        return logged.traffic

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._handlers) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._handlers.add(task)
        self._open.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            if head[:8].upper() == b"CONNECT ":
                await self._connect(head, reader, writer)
            else:
                box = HttpSide(reader, writer, h11.SERVER)
                box.h11.receive_data(head)
                await self._plain(box)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        except (h11.ProtocolError, ssl.SSLError, OSError, TimeoutError):
            pass  # a broken client or upstream ends its own connection only
        except asyncio.CancelledError:
            pass  # close() ends handlers; asyncio's server must not see them cancelled
        finally:
            self._open.discard(writer)
            try:
                await end_stream(writer, politely=True)
            finally:
                self._handlers.discard(task)  # close() waits for its socket too

    async def _decide(
        self, host: str, port: int, method: str, brokered: list[Brokered]
    ) -> tuple[str, Traffic]:
        """Check the name, resolve it once, check every address; log the decision.
        Returns the address to connect to and the counter of the connection's bytes."""
        entry = NetworkEvent(
            host=host,
            port=port,
            allowed=False,
            rule="",
            method=method,
            brokered=_names(brokered) or None,
        )
        decision = self.policy.check_name(host, port)
        if not decision.allowed:
            raise self._refuse(entry, 403, decision.rule)
        try:
            answers = await self._resolve(host, port)
            addresses = [ipaddress.ip_address(a) for a in answers]
        except (OSError, ValueError):
            addresses = []
        if not addresses:
            raise self._refuse(entry, 502, "name does not resolve")
        for address in addresses:  # every address must pass: no split answers
            verdict = self.policy.check_address(address, self._own)
            if not verdict.allowed:
                raise self._refuse(entry, 403, verdict.rule)
        chosen = str(addresses[0])
        allowed = {"allowed": True, "rule": decision.rule, "address": chosen}
        return chosen, self._record(entry.model_copy(update=allowed))

    def _host_route(self, method: str, item: Brokered) -> tuple[str, int, Traffic]:
        """Where a route golem registered to its own service on this host's loopback goes
        (exactly its upstream's address and port, whatever the path), logged: the one
        exception to the policy."""
        upstream = urlsplit(item.credential.upstream or "")
        host, port = upstream.hostname or "", upstream.port or 80
        entry = NetworkEvent(
            host=host,
            port=port,
            allowed=True,
            rule="golem host route",
            method=method,
            brokered=item.credential.name,
            address=host,
        )
        return host, port, self._record(entry)

    def _refuse(self, entry: NetworkEvent, status: int, rule: str) -> EgressRefused:
        self._record(entry.model_copy(update={"allowed": False, "rule": rule}))
        return EgressRefused(status, rule)

    # CONNECT -------------------------------------------------------------------------

    async def _connect(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            host, port = self._connect_target(head)
            applied = self.broker.for_host(host)
            address, traffic = await self._decide(host, port, "CONNECT", applied)
        except EgressRefused as refused:
            await refuse_raw(writer, refused.status, refused.rule)
            return
        if applied:
            upstream_at = Upstream(address, port, host, self._upstream_tls)
            await self._terminate(upstream_at, applied, traffic, reader, writer)
            return
        try:
            upstream = await open_socket(address, port)
        except (OSError, TimeoutError):
            await refuse_raw(writer, 502, "upstream unreachable")
            return
        box, first = take_socket(reader, writer)
        self._tunnels.add(box)
        try:
            await asyncio.get_running_loop().sock_sendall(box, ESTABLISHED)
            await splice_tunnel(box, upstream, traffic, first)
        finally:
            self._tunnels.discard(box)

    def _connect_target(self, head: bytes) -> tuple[str, int]:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        host, sep, port = parts[1].rpartition(":") if len(parts) == 3 else ("", "", "")
        if not sep or not port.isdigit() or not host or not parts[2].startswith("HTTP/"):
            raise self._malformed("malformed CONNECT: use CONNECT host:port HTTP/1.1")
        return host.strip("[]"), int(port)

    def _malformed(self, rule: str) -> EgressRefused:
        entry = NetworkEvent(host="?", port=0, allowed=False, rule="")
        return self._refuse(entry, 400, rule)

    async def _terminate(
        self,
        upstream_at: Upstream,
        applied: list[Brokered],
        traffic: Traffic,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Answer the CONNECT, speak TLS to the box as the host, relay its requests."""
        assert self._ca is not None
        writer.write(ESTABLISHED)
        await writer.drain()
        await writer.start_tls(self._ca.server_context(upstream_at.host))
        box = HttpSide(reader, writer, h11.SERVER)
        upstream: HttpSide | None = None
        try:
            while isinstance(request := await box.next_event(), h11.Request):
                upstream = await ready_upstream(upstream, upstream_at)
                await relay(box, request, request.target, upstream, upstream_at, applied, traffic)
                if not box.reusable():
                    break
                box.h11.start_next_cycle()
        finally:
            if upstream is not None:
                await upstream.drop()

    # Plain HTTP ----------------------------------------------------------------------

    async def _plain(self, box: HttpSide) -> None:
        """Relay plain-HTTP requests one by one, each decided on its own. A connection
        whose first request is to a host no credential applies to is relayed raw after
        that request's head (with ``Connection: close``): one request per connection,
        at the speed of a tunnel."""
        upstream: HttpSide | None = None
        first = True
        try:
            while True:
                try:
                    request = await box.next_event()
                except h11.RemoteProtocolError:
                    self._malformed("malformed HTTP request")
                    await send_error(box, 400, "refused (malformed HTTP request)")
                    return
                if not isinstance(request, h11.Request):
                    return
                try:
                    route = await self._route(request)
                except EgressRefused as refused:
                    await send_error(box, refused.status, f"refused ({refused.rule})")
                    return
                if first and not route.applied and route.upstream.tls is None:
                    await self._forward_raw(box, request, route)
                    return
                first = False
                if upstream is not None and upstream.at != route.upstream:
                    await upstream.drop(waited_on=True)
                    upstream = None
                try:
                    upstream = await ready_upstream(upstream, route.upstream)
                except (OSError, TimeoutError) as exc:
                    await send_error(box, 502, f"upstream unreachable ({exc.__class__.__name__})")
                    return
                await relay(
                    box,
                    request,
                    route.target,
                    upstream,
                    route.upstream,
                    route.applied,
                    route.traffic,
                )
                if not box.reusable():
                    return
                box.h11.start_next_cycle()
        finally:
            if upstream is not None:
                await upstream.drop()

    async def _forward_raw(self, box: HttpSide, request: h11.Request, route: Route) -> None:
        """Send the request's head upstream, then splice both ways until either ends."""
        try:
            upstream = await open_socket(route.upstream.address, route.upstream.port)
        except (OSError, TimeoutError) as exc:
            await send_error(box, 502, f"upstream unreachable ({exc.__class__.__name__})")
            return
        client = h11.Connection(h11.CLIENT)
        headers = [(k, v) for k, v in request.headers.raw_items() if k.lower() not in HOP_BY_HOP]
        head = client.send(
            h11.Request(
                method=request.method,
                target=route.target,
                headers=[*headers, (b"Connection", b"close")],
            )
        )
        buffered, _ = box.h11.trailing_data  # the body's start, already read by h11
        sock, unread = take_socket(box.reader, box.writer)
        self._tunnels.add(sock)
        try:
            await splice_tunnel(
                sock, upstream, route.traffic, head + buffered + unread, close_after_answer=True
            )
        finally:
            self._tunnels.discard(sock)

    async def _route(self, request: h11.Request) -> Route:
        """Decide where a plain-HTTP request goes: a credential's route, or the URL."""
        method = request.method.decode("latin-1")
        target = request.target.decode("latin-1")
        tls: ssl.SSLContext | None = None
        if target.startswith(ROUTE_PREFIX):
            name, _, rest = target.removeprefix(ROUTE_PREFIX).partition("/")
            item = self.broker.by_route(name)
            if item is None or item.credential.upstream is None:
                raise self._malformed(f"no credential route {name!r}")
            base = urlsplit(item.credential.upstream)
            url = urlsplit(base.geturl().rstrip("/") + "/" + rest)
            tls = self._upstream_tls if base.scheme == "https" else None
            applied = [item]
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                raise self._malformed("not a proxy request: use an absolute http:// URL")
            applied = self.broker.for_host(url.hostname)
        host = url.hostname or ""
        port = url.port or (443 if tls is not None else 80)
        if applied and applied[0].host_route:
            address, port, traffic = self._host_route(method, applied[0])
            host = address
        else:
            address, traffic = await self._decide(host, port, method, applied)
        origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
        return Route(Upstream(address, port, host, tls), origin.encode(), applied, traffic)


def _names(applied: list[Brokered]) -> str:
    return ",".join(item.credential.name for item in applied)
