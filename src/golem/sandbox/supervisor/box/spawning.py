"""Starting a call's process: posix_spawn, fork+exec for a pty, or a fork running one of
the supervisor's own operations; each in a new session, first in line for the OOM killer."""

from __future__ import annotations

import os
import signal
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

OOM_SCORE_FD: list[int] = []
"""/proc/self/oom_score_adj, opened at start-up while still dumpable (it is ours then)."""


class SpawnError(Exception):
    """The program could not be started (not found, not executable)."""


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``: a write may take only part of it (gVisor returns short
    writes on pipes and sockets, which Linux never does for a blocking pipe)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def set_oom_score_adj(value: int) -> None:
    for fd in OOM_SCORE_FD:
        try:
            os.write(fd, str(value).encode())
        except OSError:
            pass


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def which(program: str, path: str | None) -> str | None:
    """The first executable ``program`` on ``path`` (shutil.which without its imports)."""
    for directory in (path or os.defpath).split(os.pathsep):
        candidate = os.path.join(directory, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve(argv: list[str], env: dict[str, str]) -> str:
    program = argv[0] if "/" in argv[0] else which(argv[0], env.get("PATH"))
    if program is None:
        raise SpawnError(f"{argv[0]}: command not found")
    return program


def spawn_fast(
    argv: list[str], cwd: str, env: dict[str, str], stdin_fd: int, stdout_fd: int, stderr_fd: int
) -> int:
    """posix_spawn (vfork+exec: far cheaper than forking this process) in a new session.

    Only the main thread spawns, so changing this process's directory around it is safe.
    """
    program = resolve(argv, env)
    actions = [
        (os.POSIX_SPAWN_DUP2, stdin_fd, 0),
        (os.POSIX_SPAWN_DUP2, stdout_fd, 1),
        (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
    ]
    os.chdir(cwd)
    # The child inherits oom_score_adj at spawn: raise ours around it so the call is first
    # in line for the OOM killer from its first instruction (lowering it back to the value
    # we had is allowed without privileges).
    set_oom_score_adj(1000)
    try:
        pid = os.posix_spawn(
            program,
            argv,
            env,
            file_actions=actions,
            setsid=True,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except OSError as exc:
        raise SpawnError(f"{argv[0]}: {exc.strerror}") from None
    finally:
        set_oom_score_adj(0)
        os.chdir("/")
    return pid


def _fork() -> int:
    """fork with oom_score_adj raised around it (inherited by the child, as in spawn_fast)."""
    set_oom_score_adj(1000)
    try:
        pid = os.fork()
    except OSError:
        set_oom_score_adj(0)
        raise
    if pid != 0:
        set_oom_score_adj(0)
    return pid


def _child_setup(stdin_fd: int, stdout_fd: int, stderr_fd: int) -> None:
    """In a forked child: the call's descriptors on 0-2, its own session, default signals."""
    os.dup2(stdin_fd, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    os.setsid()
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)


def spawn_pty(argv: list[str], cwd: str, env: dict[str, str], tty_fd: int) -> int:
    """fork+exec on a pty (the child must take it as its terminal); raises SpawnError."""
    import fcntl  # before fork: a child must not take the import lock
    import termios

    program = resolve(argv, env)
    err_r, err_w = os.pipe()
    pid = _fork()
    if pid == 0:  # child: only async-signal-safe-ish work until exec
        try:
            os.close(err_r)
            _child_setup(tty_fd, tty_fd, tty_fd)
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            os.chdir(cwd)
            os.closerange(3, err_w)
            os.closerange(err_w + 1, 65536)
            os.execve(program, argv, env)
        except BaseException as exc:  # report to the parent, never return into its code
            try:
                write_all(err_w, (f"{type(exc).__name__}: {exc}").encode()[:4000])
            finally:
                os._exit(127)
    os.close(err_w)
    message = b""
    while True:
        part = os.read(err_r, 4096)
        if not part:
            break
        message += part
    os.close(err_r)
    if message:
        os.waitpid(pid, 0)
        raise SpawnError("{}: {}".format(argv[0], message.decode(errors="replace")))
    return pid


def fork_operation(
    work: Callable[[], bytes], cwd: str, stdin_fd: int, stdout_fd: int, stderr_fd: int
) -> int:
    """A child that runs ``work`` (supervisor code, already loaded: no interpreter start,
    no compile) and writes what it returns to its stdout, as a call's process would.

    It runs as what an exec call would (same user, cgroup, limits, session of its own,
    oom_score_adj 1000), and keeps no descriptor of ours: not the channel, not the
    wakeup pipe, not another call's pipes.
    """
    pid = _fork()
    if pid != 0:
        return pid
    code = 1
    try:
        _child_setup(stdin_fd, stdout_fd, stderr_fd)
        signal.set_wakeup_fd(-1)
        os.closerange(3, 65536)
        os.chdir(cwd)
        write_all(1, work())
        code = 0
    except BaseException as exc:
        try:
            write_all(2, f"golem supervisor: {type(exc).__name__}: {exc}\n".encode()[:4000])
        except BaseException:  # nothing left to tell it to
            pass
    finally:
        os._exit(code)
    return pid  # pragma: no cover - the child never gets here


def exit_watch(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits (a pidfd, or a pipe)."""
    if hasattr(os, "pidfd_open"):
        try:
            return os.pidfd_open(pid)
        except OSError:
            pass
    read_fd, write_fd = os.pipe()

    def watch() -> None:  # pragma: no cover - kernels before 5.3, Python before 3.9
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        os.close(write_fd)

    threading.Thread(target=watch, daemon=True).start()
    return read_fd
