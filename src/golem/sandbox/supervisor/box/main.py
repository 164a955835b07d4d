"""Start-up: the box's first process takes its channel, hardens itself and serves."""

from __future__ import annotations

import os
import signal
import sys
import threading

from .channel import Channel
from .reaping import reaper
from .spawning import OOM_SCORE_FD
from .supervisor import Supervisor


def set_no_dumpable() -> None:
    """Keep processes of the box user from ptracing us or reading /proc/<pid>/fd."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def install_seccomp_filter() -> None:
    """Load golem's seccomp filter (BPF) from the descriptor GOLEM_SECCOMP_FD names, where
    the box's start could not (a microVM's guest init is busybox): before anything else,
    and for good. A filter that does not load ends the supervisor: never run unfiltered."""
    fd = os.environ.pop("GOLEM_SECCOMP_FD", None)
    if fd is None:
        return
    import ctypes

    parts = []
    while True:
        part = os.read(int(fd), 65536)
        if not part:
            break
        parts.append(part)
    os.close(int(fd))
    program = b"".join(parts)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    # PR_SET_NO_NEW_PRIVS = 38, PR_SET_SECCOMP = 22, SECCOMP_MODE_FILTER = 2
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        sys.stderr.write("golem supervisor: cannot load the seccomp filter\n")
        os._exit(70)


def channel_descriptors() -> tuple[int, int]:
    """The channel's descriptors: those named in argv, or stdin and stdout moved aside;
    blocking, whatever the runtime handed over (gVisor may import a stdio socket with
    O_NONBLOCK when stdin and stdout are the same one)."""
    if len(sys.argv) == 3:
        # The channel on its own descriptors: the box's pid 1 (bubblewrap's init, whose
        # memory box processes can write) must never hold it. See docs/protocol.md.
        fd_in, fd_out = int(sys.argv[1]), int(sys.argv[2])
        for fd in (fd_in, fd_out):
            os.set_inheritable(fd, False)
    else:
        fd_in = os.dup(0)
        fd_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
    for fd in (fd_in, fd_out):
        os.set_blocking(fd, True)
    return fd_in, fd_out


def main() -> None:
    install_seccomp_filter()
    try:
        OOM_SCORE_FD.append(os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC))
    except OSError:
        pass
    set_no_dumpable()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    if os.getpid() == 1:  # the box's init: orphans come to us
        wakeup_read, wakeup_write = os.pipe()
        os.set_blocking(wakeup_read, False)
        os.set_blocking(wakeup_write, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wakeup_write, warn_on_full_buffer=False)
        threading.Thread(target=reaper, args=(wakeup_read,), daemon=True).start()
    Supervisor(Channel(*channel_descriptors())).serve()
    os._exit(0)
