"""The network bridge of a ``filtered`` box: a loopback port joined to the host's egress
proxy (a unix socket bound into the box), the only way out of such a box."""

from __future__ import annotations

import socket
import threading

BRIDGE_CHUNK = 256 * 1024
MAX_CONNECTIONS = 64


def listen(port: int, path: str) -> None:
    """Listen on 127.0.0.1:``port`` and join each connection to the unix socket ``path``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    threading.Thread(target=_accept, args=(listener, path), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction until its end; an error ends both directions."""
    try:
        while True:
            data = source.recv(BRIDGE_CHUNK)
            if not data:
                break
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _connection(conn: socket.socket, path: str, slots: threading.BoundedSemaphore) -> None:
    """One box connection to the loopback port, joined to a new one to the proxy."""
    proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proxy.connect(path)
        other = threading.Thread(target=_pump, args=(proxy, conn), daemon=True)
        other.start()
        _pump(conn, proxy)
        other.join()
    except (OSError, RuntimeError):
        pass
    finally:
        conn.close()
        proxy.close()
        slots.release()


def _accept(listener: socket.socket, path: str) -> None:
    """Accept box connections on the loopback port for as long as the box lives."""
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        if not slots.acquire(blocking=False):
            conn.close()  # a box holding every slot only starves itself
            continue
        try:
            threading.Thread(target=_connection, args=(conn, path, slots), daemon=True).start()
        except RuntimeError:  # no threads left (pids limit)
            conn.close()
            slots.release()
