"""Change notification between processes sharing one SQLite file (a server, ``golem run``,
``golem runs cancel``): each process that opens the file listens on a datagram socket of
its own and names it in a directory beside the database; a change is sent to each of them
once committed. PostgreSQL has LISTEN/NOTIFY for this (``listener.py``).

The sockets are Linux's abstract ones (no path, so no length limit or file left behind);
elsewhere this is off and waiters rely on ``RECHECK``. A datagram only wakes waiters, who
then read the database: a stray or forged one costs a read, nothing more. The kernel says
who sent each datagram (``SO_PASSCRED``), and one from another user is dropped; a flood is
read in bounded batches, each key woken once per batch, so it cannot hold the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import struct
import sys
from pathlib import Path

from golem.store.notify import Hub

__all__ = ["FileSignals"]

log = logging.getLogger("golem.store.signals")
PREFIX = "golem-store-"
MAX_DATAGRAM = 512
BATCH = 256  # datagrams read per wake-up of the loop; the rest wait for the next
CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


def _address(name: str) -> str:
    return f"\0{PREFIX}{name}"


class FileSignals:
    """This process's socket for the database at ``database``, and its sending side."""

    def __init__(self, database: Path, hub: Hub) -> None:
        self.directory = database.with_name(database.name + ".listeners")
        self._hub = hub
        self._name = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._socket: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def available() -> bool:
        """Whether this platform has abstract sockets."""
        return sys.platform == "linux"

    def start(self) -> None:
        """Listen, and let other processes know where."""
        self.directory.mkdir(mode=0o700, exist_ok=True)
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        listening.setblocking(False)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        listening.bind(_address(self._name))
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(listening.fileno(), self._receive)
        self._socket = listening
        (self.directory / self._name).touch(mode=0o600)

    def close(self) -> None:
        """Stop listening."""
        (self.directory / self._name).unlink(missing_ok=True)
        if self._socket is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                self._loop.remove_reader(self._socket.fileno())
            self._socket.close()
            self._socket = None

    def send(self, keys: tuple[str, ...]) -> None:
        """Tell every other process listening on this database that ``keys`` changed."""
        if self._socket is None or not keys:
            return
        try:
            names = [p.name for p in self.directory.iterdir() if p.name != self._name]
        except OSError:
            return
        for name in names:
            for key in keys:
                try:
                    self._socket.sendto(key.encode(), _address(name))
                except ConnectionRefusedError:  # that process is gone
                    (self.directory / name).unlink(missing_ok=True)
                    break
                except OSError:  # its buffer is full: it re-reads at its next re-check
                    break

    def _receive(self) -> None:
        assert self._socket is not None
        keys: set[str] = set()
        for _ in range(BATCH):
            try:
                data, ancillary, _flags, _sender = self._socket.recvmsg(
                    MAX_DATAGRAM, socket.CMSG_SPACE(CREDENTIALS.size)
                )
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                log.warning("change signals: %s", exc)
                break
            if _sender_uid(ancillary) == os.getuid():
                keys.add(data.decode(errors="replace"))
        for key in keys:
            self._hub.notify(key)


def _sender_uid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    """The user id the kernel gives for a datagram's sender, if it gave one."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            return int(CREDENTIALS.unpack_from(data)[1])
    return None
