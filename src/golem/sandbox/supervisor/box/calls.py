"""One call: a process started by ``exec`` (or a supervisor operation run by ``tool``),
its pipes, stdin, limits, output and outcome."""

from __future__ import annotations

import os
import select
import struct
import threading
import time

from .framing import CHUNK, EXIT, OUT
from .output import OutputBuffer
from .reaping import REAP_LOCK, WAITED
from .spawning import exit_watch, fork_operation, kill_group, spawn_fast, spawn_pty

TYPE_CHECKING = False
if TYPE_CHECKING:
    import queue
    from typing import Any, Callable

    from .channel import Channel

DRAIN_AFTER_EXIT = 2.0
CODE_SUFFIX = {"python": ".py", "node": ".js", "bash": ".sh", "sh": ".sh"}


class Invalid(Exception):
    """A request that cannot run as given (the host raises InvalidRequest)."""


class UnknownProcess(Exception):
    """A request names a process the box does not have (the host raises ProcessNotFound)."""


class Call:
    """One process of a call: started by ``start``, watched by a thread of its own."""

    def __init__(
        self,
        channel: Channel,
        msg: dict[str, Any],
        payload: bytes,
        env: dict[str, str],
        finished: Callable[[Call], None],
        operation: Callable[[], bytes] | None = None,
    ) -> None:
        self.channel = channel
        self.finished = finished
        self.operation = operation
        self.id = str(msg["id"])
        self.background = bool(msg.get("background"))
        self.timeout: float | None = msg.get("timeout")
        self.idle_timeout: float | None = msg.get("idle_timeout")
        self.max_output = int(msg.get("max_output") or 0)
        self.use_pty = bool(msg.get("pty"))
        self.sent = 0
        self.truncated = False
        self.timed_out = False
        self.idle_timed_out = False
        self.last_output = time.monotonic()
        self.started = time.monotonic()
        self.duration = 0.0
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.buffer = OutputBuffer(self.max_output)  # background output
        self.exit_msg: dict[str, Any] | None = None
        self.pid = self.pgid = 0
        self.outputs: dict[int, str] = {}
        self.stdin_w: int | None = None
        self.stdin_queue: queue.SimpleQueue[bytes | None] | None = None  # a writer thread's
        self.pty_master: int | None = None
        self.argv = self._argv(msg, payload)
        self.cwd = msg.get("cwd") or "/"
        self.env = dict(env)
        self.env.update(msg.get("env") or {})
        self.stdin_mode = msg.get("stdin", "null")

    def _argv(self, msg: dict[str, Any], payload: bytes) -> list[str]:
        argv = [str(arg) for arg in msg["argv"]]
        runtime = msg.get("runtime")
        if runtime:
            code_dir = os.path.join("/tmp", ".golem-code")
            os.makedirs(code_dir, mode=0o700, exist_ok=True)
            path = os.path.join(code_dir, self.id + CODE_SUFFIX.get(runtime, ""))
            with open(path, "wb") as handle:
                handle.write(payload)
            argv.append(path)
        return argv

    def start(self, workspace_root: str) -> None:
        cwd = os.path.realpath(self.cwd)
        root = workspace_root
        if root and not (cwd == root or cwd.startswith(root + "/")):
            raise Invalid(f"workdir {self.cwd} resolves to {cwd}, outside {root}")
        if not os.path.isdir(cwd):
            os.makedirs(cwd, exist_ok=True)
        if self.use_pty:
            self._start_pty(cwd)
        else:
            self._start_pipes(cwd)
        self.pgid = self.pid
        try:
            threading.Thread(target=self._run, daemon=True).start()
        except BaseException:  # no thread to watch it (pids exhausted): it must not live on
            kill_group(self.pgid)
            os.waitpid(self.pid, 0)
            WAITED.discard(self.pid)
            for fd in [*list(self.outputs), self.stdin_w]:
                if fd is not None:
                    os.close(fd)
            raise

    def _start_pipes(self, cwd: str) -> None:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_w: int | None
        if self.stdin_mode == "pipe":
            in_r, in_w = os.pipe()
        else:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), None
        try:
            with REAP_LOCK:
                if self.operation is not None:
                    self.pid = fork_operation(self.operation, cwd, in_r, out_w, err_w)
                else:
                    self.pid = spawn_fast(self.argv, cwd, self.env, in_r, out_w, err_w)
                WAITED.add(self.pid)
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        self.stdin_w = in_w
        self.outputs = {out_r: "stdout", err_r: "stderr"}

    def _start_pty(self, cwd: str) -> None:
        import pty

        master, slave = pty.openpty()
        try:
            with REAP_LOCK:
                self.pid = spawn_pty(self.argv, cwd, self.env, slave)
                WAITED.add(self.pid)
        finally:
            os.close(slave)
        self.pty_master = master
        self.stdin_w = os.dup(master)
        self.outputs = {master: "stdout"}

    def _emit(self, stream: str, data: bytes) -> None:
        with self.lock:
            if self.background:  # kept in the box: its latest bytes, within the cap
                self.truncated = self.buffer.append(data) or self.truncated
                return
            room = self.max_output - self.sent if self.max_output else len(data)
            if room <= 0:
                self.truncated = True
                return
            if len(data) > room:
                data = data[:room]
                self.truncated = True
            self.sent += len(data)
        self.channel.send({"op": OUT, "id": self.id, "stream": stream}, data)

    def _next_timeout(self, now: float, drain_until: float | None) -> float | None:
        deadlines = []
        if drain_until is not None:
            deadlines.append(drain_until)
        else:
            if self.timeout:
                deadlines.append(self.started + self.timeout)
            if self.idle_timeout:
                deadlines.append(self.last_output + self.idle_timeout)
        return max(min(deadlines) - now, 0) if deadlines else None

    def _check_limits(self, now: float) -> None:
        if self.timeout and now - self.started >= self.timeout:
            self.timed_out = True
        elif self.idle_timeout and now - self.last_output >= self.idle_timeout:
            self.idle_timed_out = True
        else:
            return
        kill_group(self.pgid)

    def _run(self) -> None:
        """One thread per call: its output pipes and its exit, multiplexed with poll."""
        poller = select.poll()
        watched: dict[int, str | None] = dict(self.outputs)
        exit_fd = exit_watch(self.pid)
        watched[exit_fd] = None
        for fd in watched:
            poller.register(fd, select.POLLIN)
        status = usage = None
        drain_until = None
        while watched:
            now = time.monotonic()
            if drain_until is not None and now >= drain_until:
                break  # an escaped process holds the pipes; stop listening to it
            timeout = self._next_timeout(now, drain_until)
            for fd, _ in poller.poll(None if timeout is None else timeout * 1000):
                stream = watched.get(fd)
                if fd == exit_fd:
                    _, status, usage = os.wait4(self.pid, 0)
                    WAITED.discard(self.pid)
                    self.duration = time.monotonic() - self.started
                    kill_group(self.pgid)  # leftovers must not hold the call's pipes open
                    drain_until = time.monotonic() + DRAIN_AFTER_EXIT
                    data = b""
                else:
                    try:
                        data = os.read(fd, CHUNK)
                    except OSError:
                        data = b""  # EIO on a pty whose child exited
                if data and stream is not None:
                    self.last_output = time.monotonic()
                    self._emit(stream, data)
                else:
                    poller.unregister(fd)
                    del watched[fd]
                    os.close(fd)
            if status is None:
                self._check_limits(time.monotonic())
        for fd in watched:
            os.close(fd)
        assert status is not None  # the loop ends only after the exit descriptor fired
        assert usage is not None
        self._finish(status, usage)

    def _finish(self, status: int, usage: Any) -> None:
        self.close_stdin(eof=False)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = 128 + sig if sig is not None else os.WEXITSTATUS(status)
        self.exit_msg = {
            "op": EXIT,
            "id": self.id,
            "exit_code": code,
            "signal": sig,
            "timed_out": self.timed_out,
            "idle_timed_out": self.idle_timed_out,
            "truncated": self.truncated,
            "duration": self.duration,
            "cpu_user": usage.ru_utime,
            "cpu_system": usage.ru_stime,
            "max_rss_kb": usage.ru_maxrss,
        }
        self.done.set()
        self.finished(self)

    def write_stdin(self, data: bytes) -> None:
        """Queue bytes for the call's stdin; a call that does not read blocks only itself."""
        if self.stdin_w is None:
            return
        if self.stdin_queue is None:
            import queue

            self.stdin_queue = queue.SimpleQueue()
            threading.Thread(
                target=self._write_stdin, args=(self.stdin_w, self.stdin_queue), daemon=True
            ).start()
        self.stdin_queue.put(data)

    @staticmethod
    def _write_stdin(fd: int, pending: queue.SimpleQueue[bytes | None]) -> None:
        broken = False
        while True:
            data = pending.get()
            if data is None:
                break
            try:
                view = memoryview(data)
                while view and not broken:
                    view = view[os.write(fd, view) :]
            except OSError:
                broken = True  # the reader is gone; keep draining until told to close
        try:
            os.close(fd)
        except OSError:
            pass

    def close_stdin(self, eof: bool = True) -> None:
        """End the call's stdin (on a pty, ``eof`` sends ^D instead of closing it)."""
        if self.stdin_w is None:
            return
        if self.pty_master is not None and eof:
            self.write_stdin(b"\x04")
            return
        if self.stdin_queue is not None:
            self.stdin_queue.put(None)  # the writer thread closes it after what is queued
        else:
            try:
                os.close(self.stdin_w)
            except OSError:
                pass
        self.stdin_w = None

    def resize(self, rows: int, cols: int) -> None:
        if self.pty_master is None:
            return
        import fcntl
        import termios

        fcntl.ioctl(self.pty_master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_output(self, offset: int) -> tuple[int, int, bytes]:
        """A background call's kept output from ``offset`` on: where it begins, where it
        ends, and the bytes."""
        with self.lock:
            start, data = self.buffer.read(offset)
            return start, self.buffer.end, data

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "argv": self.argv,
            "pid": self.pid,
            "running": not self.done.is_set(),
            "exit_code": self.exit_msg["exit_code"] if self.exit_msg else None,
            "output_bytes": self.buffer.end,
        }
