"""Tunnels whose bytes never enter Python: splice(2) moves them socket -> pipe -> socket.

A CONNECT tunnel that is not brokered carries bytes the proxy never looks at. Moving them
through a kernel pipe instead of recv/send saves two copies per chunk and most of the
proxy's CPU, which on a small machine competes with the box and the upstream. Each
direction is a small callback-driven pump on the event loop: it splices until the kernel
says EAGAIN, so a small exchange costs one callback, not a task switch per wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket

from golem.sandbox.egress.http import Traffic

__all__ = ["splice_tunnel"]

PIPE_SIZE = 1024 * 1024
MAX_HEAD = 64 * 1024
FLAGS = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK


class _Pump:
    """One direction: bytes from ``source`` to ``sink`` until the source ends, then a
    half-close of the sink. Bytes are counted as they enter the pipe."""

    def __init__(
        self, source: socket.socket, sink: socket.socket, traffic: Traffic, *, up: bool
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.source, self.sink = source.fileno(), sink.fileno()
        self.sink_socket = sink
        self.traffic, self.up = traffic, up
        self.pipe_out, self.pipe_in = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.pipe_in, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        self.pending = 0  # bytes in the pipe, not yet in the sink
        self.done: asyncio.Future[None] = self.loop.create_future()
        self.loop.add_reader(self.source, self._move)

    def _move(self) -> None:
        try:
            while True:
                if not self.pending:
                    try:
                        moved = os.splice(self.source, self.pipe_in, PIPE_SIZE, flags=FLAGS)
                    except BlockingIOError:
                        return  # stays registered for the next readable source
                    if moved == 0:
                        self._finish(None)
                        return
                    self.pending = moved
                    if self.up:
                        self.traffic.up += moved
                    else:
                        self.traffic.down += moved
                try:
                    self.pending -= os.splice(self.pipe_out, self.sink, self.pending, flags=FLAGS)
                except BlockingIOError:  # the sink is full: wait for it, not the source
                    self.loop.remove_reader(self.source)
                    self.loop.add_writer(self.sink, self._writable)
                    return
        except OSError as exc:
            self._finish(exc)

    def _writable(self) -> None:
        self.loop.remove_writer(self.sink)
        self.loop.add_reader(self.source, self._move)
        self._move()

    def _finish(self, error: OSError | None) -> None:
        self.close()
        if error is None:
            with contextlib.suppress(OSError):
                self.sink_socket.shutdown(socket.SHUT_WR)
        if not self.done.done():
            if error is None:
                self.done.set_result(None)
            else:
                self.done.set_exception(error)

    def close(self) -> None:
        """Stop watching and free the pipe (safe to call twice)."""
        if self.pipe_in < 0:
            return
        self.loop.remove_reader(self.source)
        self.loop.remove_writer(self.sink)
        os.close(self.pipe_in)
        os.close(self.pipe_out)
        self.pipe_in = self.pipe_out = -1


async def _closing_head(upstream: socket.socket, box: socket.socket, traffic: Traffic) -> None:
    """Pass the answer's head (and any 1xx before it) with ``Connection: close`` put in,
    and the body bytes that came with it; the rest is spliced."""
    loop = asyncio.get_running_loop()
    data = b""
    while True:
        while b"\r\n\r\n" not in data:
            if len(data) > MAX_HEAD:
                raise OSError("the upstream's answer head is too long")
            chunk = await loop.sock_recv(upstream, 65536)
            if not chunk:
                raise OSError("the upstream closed before answering")
            data += chunk
        head, _, data = data.partition(b"\r\n\r\n")
        informational = head[9:10] == b"1"  # "HTTP/1.1 1xx"
        out = (head if informational else _with_close(head)) + b"\r\n\r\n"
        if not informational:
            out += data
        traffic.down += len(out)
        await loop.sock_sendall(box, out)
        if not informational:
            return


def _with_close(head: bytes) -> bytes:
    lines = head.split(b"\r\n")
    dropped = (b"connection:", b"keep-alive:", b"proxy-connection:")
    kept = [line for line in lines[1:] if not line.lower().startswith(dropped)]
    return b"\r\n".join([lines[0], *kept, b"Connection: close"])


async def splice_tunnel(
    box: socket.socket,
    upstream: socket.socket,
    traffic: Traffic,
    first: bytes = b"",
    *,
    close_after_answer: bool = False,
) -> None:
    """Join two connected non-blocking sockets until both directions end (or one fails);
    ``first`` is what the box sent before the tunnel opened. With ``close_after_answer``
    (a plain-HTTP request relayed raw), the answer's head tells the client the connection
    ends with it. Closes both sockets."""
    loop = asyncio.get_running_loop()
    pumps: list[_Pump] = []
    try:
        if first:
            traffic.up += len(first)
            await loop.sock_sendall(upstream, first)
        pumps.append(_Pump(box, upstream, traffic, up=True))
        if close_after_answer:
            await _closing_head(upstream, box, traffic)
        pumps.append(_Pump(upstream, box, traffic, up=False))
        for pump in pumps:
            await pump.done
    except OSError:
        pass  # a reset on either side ends the tunnel
    finally:
        for pump in pumps:
            pump.close()
        box.close()
        upstream.close()
