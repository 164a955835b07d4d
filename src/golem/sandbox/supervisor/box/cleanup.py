"""What a warm pool's ``reset`` empties besides the processes: directories and IPC."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def empty(roots: list[str]) -> None:
    """Remove everything inside each of ``roots``, keeping the roots themselves."""
    for root in roots:
        for name in os.listdir(root):
            target = os.path.join(root, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                try:
                    os.unlink(target)
                except OSError:
                    pass


IPC_PRIVATE = 0
IPC_CREAT = 0o1000
IPC_RMID = 0
MAX_SCAN = 16384
"""Most ids a wipe tries where the kernel cannot list its IPC objects (gVisor): a box that
made more since the last wipe is not wiped, and so never handed out again (~0.6 s)."""


class IpcUnlisted(Exception):
    """The IPC objects of the box cannot be found: the box must not serve another session."""


def remove_sysv_ipc(marks: dict[str, int]) -> None:
    """Remove every System V shared memory segment, semaphore set and message queue.

    Linux lists them in /proc/sysvipc. gVisor has no such files (nor a working SHM_INFO),
    but gives ids in sequence from the last one it gave: there, a new object's id bounds
    every id made since the last wipe (``marks``, per kind), and each of those is removed.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, remove in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        try:
            with open("/proc/sysvipc/" + kind) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            _remove_in_sequence(libc, kind, remove, marks)
            continue
        for row in rows:
            _remove(kind, remove, int(row.split()[1]))


def _remove(kind: str, remove: Any, ipc_id: int) -> None:
    if kind == "sem":
        remove(ipc_id, 0, IPC_RMID, None)
    else:
        remove(ipc_id, IPC_RMID, None)


def _remove_in_sequence(libc: Any, kind: str, remove: Any, marks: dict[str, int]) -> None:
    if kind == "shm":
        probe = libc.shmget(IPC_PRIVATE, 1, IPC_CREAT | 0o600)
    elif kind == "sem":
        probe = libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600)
    else:
        probe = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)
    if probe < 0:
        if ctypes.get_errno() == errno.ENOSYS:  # no System V IPC in this kernel
            return
        raise IpcUnlisted(f"cannot make a probe {kind} object: {ctypes.get_errno()}")
    mark = marks.get(kind, 0)
    try:
        if not mark < probe <= mark + MAX_SCAN:
            raise IpcUnlisted(f"{kind} ids went from {mark} to {probe}")
        for ipc_id in range(mark + 1, probe):
            _remove(kind, remove, ipc_id)
    finally:
        _remove(kind, remove, probe)
    marks[kind] = probe
