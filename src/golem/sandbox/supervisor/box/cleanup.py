"""What a warm pool's ``reset`` empties besides the processes: directories and IPC."""

from __future__ import annotations

import ctypes
import os
import shutil


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


def remove_sysv_ipc() -> None:
    """Remove every System V shared memory segment, semaphore set and message queue."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, remove in (("shm", libc.shmctl), ("sem", libc.semctl), ("msg", libc.msgctl)):
        try:
            with open("/proc/sysvipc/" + kind) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ipc_id = int(row.split()[1])
            if kind == "sem":
                remove(ipc_id, 0, 0)  # IPC_RMID = 0
            else:
                remove(ipc_id, 0, None)
