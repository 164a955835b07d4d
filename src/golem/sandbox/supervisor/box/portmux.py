"""The egress bridge of a microVM box: loopback connections carried as channels over one
virtio-serial port (a character device), where other boxes reach a unix socket.

A microVM has no network device and no socket shared with the host: its only ways out are
virtio-serial ports. The host ends each channel at its egress proxy's socket. The wire
format, defined here for both ends: frames of a 9-byte header (kind: u8, channel: u32,
length: u32; big-endian), then ``length`` payload bytes for DATA (for CREDIT, ``length``
is the credit and no payload follows). Each side may send at most WINDOW bytes of a
channel beyond what the other side has credited back; a DATA frame holds at most
MAX_DATA bytes. The box opens channels; either side ends its writing (EOF) or the whole
channel (CLOSE).
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import struct
import threading

HEADER = struct.Struct(">BII")
OPEN, DATA, EOF, CLOSE, CREDIT = 1, 2, 3, 4, 5
KINDS = (OPEN, DATA, EOF, CLOSE, CREDIT)
WINDOW = 64 * 1024
MAX_DATA = 32 * 1024
MAX_CHANNELS = 512
PORT_BACKLOG = 4 * WINDOW  # frames waiting for the port: past it, box sockets wait
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


def frame(kind: int, channel: int, payload: bytes = b"", length: int = -1) -> bytes:
    """One frame; ``length`` is CREDIT's credit (its payload is empty)."""
    size = len(payload) if length < 0 else length
    return HEADER.pack(kind, channel, size) + payload


def listen(listener: socket.socket, device: str) -> None:
    """Carry each connection to ``listener`` over the port at ``device``, in a thread."""
    port = os.open(device, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    threading.Thread(target=PortBridge(listener, port).run, daemon=True).start()


class Channel:
    """One box connection: what waits to be written to it, and the host's window."""

    __slots__ = (
        "events",
        "host_done",
        "number",
        "outgoing",
        "read_done",
        "sock",
        "unacked",
        "window",
        "write_shut",
    )

    def __init__(self, number: int, sock: socket.socket) -> None:
        self.number = number
        self.sock = sock
        self.outgoing = b""  # from the host, for the box's socket
        self.unacked = 0  # bytes written to the socket, not yet credited to the host
        self.window = WINDOW  # bytes the host still takes from us
        self.read_done = False  # the box's socket ended its writing
        self.host_done = False  # the host ended its writing (EOF)
        self.write_shut = False
        self.events = 0


class PortBridge:
    """Accepts loopback connections and multiplexes them over the port, one thread."""

    def __init__(self, listener: socket.socket, port: int) -> None:
        self.listener = listener
        self.port = port
        self.selector = selectors.DefaultSelector()
        self.channels: dict[int, Channel] = {}
        self.next_number = 1
        self.incoming = b""  # from the port, not yet a whole frame
        self.to_port = bytearray()
        self.port_events = 0
        self.accepting = False

    def run(self) -> None:
        self._watch_port()
        self._accept_again()
        while True:
            for key, events in self.selector.select():
                try:
                    if key.data is None:
                        self._accept()
                    elif key.data == "port":
                        if events & READ and not self._read_port():
                            return  # the host went away: so has every way out
                        if events & WRITE:
                            self._flush_port()
                    else:
                        self._step(key.data, events)
                except OSError:
                    if isinstance(key.data, Channel):
                        self._close(key.data, tell_host=True)
            self._watch_port()
            for channel in list(self.channels.values()):
                self._watch(channel)
            self._accept_again()

    # The port ----------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        self.to_port += data
        self._flush_port()

    def _flush_port(self) -> None:
        while self.to_port:
            try:
                written = os.write(self.port, self.to_port[: 64 * 1024])
            except BlockingIOError:
                return
            del self.to_port[:written]

    def _watch_port(self) -> None:
        wanted = READ | (WRITE if self.to_port else 0)
        if wanted != self.port_events:
            if self.port_events:
                self.selector.modify(self.port, wanted, "port")
            else:
                self.selector.register(self.port, wanted, "port")
            self.port_events = wanted

    def _read_port(self) -> bool:
        try:
            data = os.read(self.port, 256 * 1024)
        except BlockingIOError:
            return True
        except OSError as exc:
            return exc.errno == errno.EINTR
        if not data:
            return False
        self.incoming += data
        while len(self.incoming) >= HEADER.size:
            kind, number, length = HEADER.unpack_from(self.incoming)
            size = length if kind == DATA else 0
            if kind not in KINDS or (kind == DATA and length > MAX_DATA):
                return False  # not our host: stop
            if len(self.incoming) < HEADER.size + size:
                break
            payload = self.incoming[HEADER.size : HEADER.size + size]
            self.incoming = self.incoming[HEADER.size + size :]
            self._from_host(kind, number, length, payload)
        return True

    def _from_host(self, kind: int, number: int, length: int, payload: bytes) -> None:
        channel = self.channels.get(number)
        if channel is None:
            return  # a channel that ended meanwhile
        if kind == DATA:
            if len(channel.outgoing) + len(payload) > WINDOW:
                self._close(channel, tell_host=True)  # past its window: the host is wrong
                return
            channel.outgoing += payload
            self._write_box(channel)
        elif kind == EOF:
            channel.host_done = True
            self._write_box(channel)
        elif kind == CLOSE:
            self._close(channel, tell_host=False)
        elif kind == CREDIT:
            channel.window = min(WINDOW, channel.window + length)

    # Box connections ---------------------------------------------------------------------

    def _accept_again(self) -> None:
        if not self.accepting and len(self.channels) < MAX_CHANNELS:
            self.selector.register(self.listener, READ, None)
            self.accepting = True

    def _accept(self) -> None:
        while len(self.channels) < MAX_CHANNELS:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, OSError):
                return
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            number = self.next_number
            self.next_number = self.next_number % 0xFFFFFFFF + 1
            channel = self.channels[number] = Channel(number, conn)
            self._send(frame(OPEN, number))
            self._watch(channel)
        if self.accepting:
            self.selector.unregister(self.listener)  # the rest wait in the backlog
            self.accepting = False

    def _step(self, channel: Channel, events: int) -> None:
        if events & READ:
            self._read_box(channel)
        if events & WRITE:
            self._write_box(channel)

    def _read_box(self, channel: Channel) -> None:
        if channel.window <= 0 or channel.read_done:
            return
        try:
            data = channel.sock.recv(min(channel.window, MAX_DATA))
        except BlockingIOError:
            return
        if not data:
            channel.read_done = True
            self._send(frame(EOF, channel.number))
            self._maybe_finished(channel)
            return
        channel.window -= len(data)
        self._send(frame(DATA, channel.number, data))

    def _write_box(self, channel: Channel) -> None:
        if channel.outgoing:
            try:
                sent = channel.sock.send(channel.outgoing)
            except BlockingIOError:
                sent = 0
            channel.outgoing = channel.outgoing[sent:]
            channel.unacked += sent
        if channel.unacked and (not channel.outgoing or channel.unacked >= WINDOW // 2):
            self._send(frame(CREDIT, channel.number, length=channel.unacked))
            channel.unacked = 0
        if channel.host_done and not channel.outgoing and not channel.write_shut:
            channel.sock.shutdown(socket.SHUT_WR)
            channel.write_shut = True
        self._maybe_finished(channel)

    def _maybe_finished(self, channel: Channel) -> None:
        if channel.read_done and channel.write_shut:
            self._close(channel, tell_host=True)

    def _watch(self, channel: Channel) -> None:
        if channel.number not in self.channels:
            return
        reading = not channel.read_done and channel.window > 0 and len(self.to_port) < PORT_BACKLOG
        wanted = (READ if reading else 0) | (WRITE if channel.outgoing else 0)
        if wanted == channel.events:
            return
        if not channel.events:
            self.selector.register(channel.sock, wanted, channel)
        elif not wanted:
            self.selector.unregister(channel.sock)
        else:
            self.selector.modify(channel.sock, wanted, channel)
        channel.events = wanted

    def _close(self, channel: Channel, tell_host: bool) -> None:
        if self.channels.pop(channel.number, None) is None:
            return
        if channel.events:
            try:
                self.selector.unregister(channel.sock)
            except (KeyError, ValueError):
                pass
            channel.events = 0
        channel.sock.close()
        if tell_host:
            self._send(frame(CLOSE, channel.number))
