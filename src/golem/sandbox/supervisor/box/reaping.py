"""Reaping: as the box's pid 1 the supervisor inherits orphans, and must collect them."""

from __future__ import annotations

import os
import select
import sys
import threading

WAITED: set[int] = set()
"""Children whose status a call's thread collects; the orphan reaper leaves them alone."""
REAP_LOCK = threading.Lock()
"""Held while reaping and while a child is spawned and added to WAITED."""


def reap_orphans() -> None:
    """Reap the zombies among the processes whose parent we are."""
    me = os.getpid()
    with REAP_LOCK:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me or int(entry) in WAITED:
                continue
            try:
                with open("/proc/" + entry + "/stat") as handle:
                    stat = handle.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                try:
                    os.waitpid(int(entry), os.WNOHANG)
                except ChildProcessError:
                    pass


def reaper(wakeup_fd: int) -> None:
    """Reap after each SIGCHLD (and every few seconds regardless).

    The signal only writes a byte to ``wakeup_fd`` (signal.set_wakeup_fd, done in C): a
    Python handler that took a lock could be re-entered by the next SIGCHLD and deadlock.
    """
    while True:
        ready, _, _ = select.select([wakeup_fd], [], [], 5.0)
        if ready:
            try:
                os.read(wakeup_fd, 4096)
            except BlockingIOError:
                pass
        try:
            reap_orphans()
        except Exception as exc:  # never let the reaper die: zombies would fill the box
            sys.stderr.write(f"golem supervisor: reaper: {exc!r}\n")


def box_pids() -> list[int]:
    """Every live process of the box but ourselves (zombies are not alive)."""
    me = os.getpid()
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me:
            try:
                with open("/proc/" + entry + "/stat") as handle:
                    stat = handle.read()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] != "Z":
                alive.append(int(entry))
    return alive
