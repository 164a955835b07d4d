"""The network bridge of a ``filtered`` box: a loopback port joined to the host's egress
proxy (a unix socket bound into the box), the only way out of such a box.

One thread serves every connection with a selector: a package manager opens hundreds of
connections at once, and a thread per connection would spend the box's pids limit (threads
count) and memory. At most ``MAX_CONNECTIONS`` are joined at a time; more wait in the
listen backlog (never refused) until one ends. The proxy enforces its own cap too: a box
may bypass this bridge, which is the box's own code."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import stat
import threading
import time

BRIDGE_CHUNK = 256 * 1024
DRAIN_ROUNDS = 16
MAX_CONNECTIONS = 512
BACKLOG = 4096  # the kernel caps it at net.core.somaxconn
PROXY_CONNECT_TIMEOUT = 30.0
OUT_OF_FILES_PAUSE = 0.5
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


def listen(port: int, path: str) -> None:
    """Listen on 127.0.0.1:``port`` and join each connection to the unix socket ``path``
    (or, where ``path`` is a microVM's virtio-serial port, carry it over that port)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(BACKLOG)
    listener.setblocking(False)
    if stat.S_ISCHR(os.stat(path).st_mode):
        from . import portmux

        portmux.listen(listener, path)
        return
    threading.Thread(target=Bridge(listener, path).run, daemon=True).start()


class Side:
    """One socket of a joint: what waits to be written to it, and whether its reading
    (the other socket's writing) has ended."""

    __slots__ = ("events", "outgoing", "read_done", "sock", "write_shut")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.outgoing = b""
        self.read_done = False
        self.write_shut = False
        self.events = 0


class Joint:
    """A box connection joined to one of the proxy's."""

    __slots__ = ("closed", "sides")

    def __init__(self, box: socket.socket, proxy: socket.socket) -> None:
        self.sides = (Side(box), Side(proxy))
        self.closed = False

    def peer(self, side: Side) -> Side:
        return self.sides[1] if side is self.sides[0] else self.sides[0]

    def step(self, side: Side, events: int) -> None:
        """Move what ``events`` allow; raises OSError when either socket fails."""
        peer = self.peer(side)
        if events & READ:
            _drain(side, peer)
        for target in self.sides:
            _send(target)
            source = self.peer(target)
            if source.read_done and not target.outgoing and not target.write_shut:
                target.sock.shutdown(socket.SHUT_WR)
                target.write_shut = True

    def finished(self) -> bool:
        return all(side.write_shut for side in self.sides)

    def wanted(self, side: Side) -> int:
        """The events ``side``'s socket waits for now."""
        reading = not side.read_done and not self.peer(side).outgoing
        return (READ if reading else 0) | (WRITE if side.outgoing else 0)


def _drain(side: Side, peer: Side) -> None:
    """Copy from ``side`` to ``peer`` while both keep up (fewer trips through the selector
    for a download), at most ``DRAIN_ROUNDS`` chunks at a time so no joint holds the rest."""
    for _ in range(DRAIN_ROUNDS):
        if peer.outgoing:
            return
        try:
            data = side.sock.recv(BRIDGE_CHUNK)
        except BlockingIOError:
            return
        if not data:
            side.read_done = True
            return
        peer.outgoing = data
        _send(peer)


def _send(side: Side) -> None:
    if not side.outgoing:
        return
    try:
        sent = side.sock.send(side.outgoing)
    except BlockingIOError:
        return
    side.outgoing = side.outgoing[sent:]


class Bridge:
    """Accepts box connections and moves their bytes, for as long as the box lives."""

    def __init__(self, listener: socket.socket, path: str) -> None:
        self.listener = listener
        self.path = path
        self.selector = selectors.DefaultSelector()
        self.joints = 0
        self.accepting = False
        self.paused_until = 0.0  # out of descriptors: accept again from then on

    def run(self) -> None:
        self._accept_again()
        while True:
            timeout = None
            if self.paused_until:
                timeout = max(0.0, self.paused_until - time.monotonic())
            ready = self.selector.select(timeout)
            if self.paused_until and time.monotonic() >= self.paused_until:
                self.paused_until = 0.0
                self._accept_again()
            for key, events in ready:
                try:
                    if key.data is None:
                        self._accept()
                    else:
                        self._step(key.data[0], key.data[1], events)
                except Exception:  # the box's only way out must outlive any connection
                    if key.data is not None:
                        self._close(key.data[0])

    def _accept_again(self) -> None:
        if not self.accepting and not self.paused_until and self.joints < MAX_CONNECTIONS:
            self.selector.register(self.listener, READ, None)
            self.accepting = True

    def _stop_accepting(self) -> None:
        if self.accepting:
            self.selector.unregister(self.listener)
            self.accepting = False

    def _accept(self) -> None:
        while self.joints < MAX_CONNECTIONS:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.paused_until = time.monotonic() + OUT_OF_FILES_PAUSE  # no busy loop
                    self._stop_accepting()
                return
            self._join(conn)
        self._stop_accepting()  # the rest wait in the backlog until a joint ends

    def _join(self, conn: socket.socket) -> None:
        proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proxy.settimeout(PROXY_CONNECT_TIMEOUT)
            proxy.connect(self.path)
            proxy.setblocking(False)
            conn.setblocking(False)
            # an answer comes from the proxy in pieces (head, body): without this, each
            # piece after the first waits for the client's delayed ACK (~40 ms, Nagle)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            conn.close()
            proxy.close()
            return
        joint = Joint(conn, proxy)
        self.joints += 1
        for side in joint.sides:
            self._watch(joint, side)

    def _step(self, joint: Joint, side: Side, events: int) -> None:
        if joint.closed:  # an event of the same round as the one that closed it
            return
        try:
            joint.step(side, events)
        except OSError:
            self._close(joint)
            return
        if joint.finished():
            self._close(joint)
            return
        for each in joint.sides:
            self._watch(joint, each)

    def _watch(self, joint: Joint, side: Side) -> None:
        wanted = joint.wanted(side)
        if wanted == side.events:
            return
        if not side.events:
            self.selector.register(side.sock, wanted, (joint, side))
        elif not wanted:
            self.selector.unregister(side.sock)
        else:
            self.selector.modify(side.sock, wanted, (joint, side))
        side.events = wanted

    def _close(self, joint: Joint) -> None:
        if joint.closed:
            return
        joint.closed = True
        for side in joint.sides:
            if side.events:
                try:
                    self.selector.unregister(side.sock)
                except (KeyError, ValueError):
                    pass
                side.events = 0
            side.sock.close()
        self.joints -= 1
        self._accept_again()
