"""golem's in-box supervisor: the first process of every box (stdlib only, Python >= 3.8).

It speaks golem's framed protocol (docs/protocol.md) on its stdin and stdout: each frame is
an 8-byte header (JSON length, payload length; big-endian u32), a JSON object, then raw
payload bytes. The host sends requests (exec, stdin, signal, put, get, procs, ...); the
supervisor answers with frames tagged by the request's ``id``. Exec, streaming, stdin,
signals, timeouts, output caps and file transfer live here once, for every backend.

This file is copied into boxes verbatim; it must not import anything outside the stdlib.
"""

import ctypes
import json
import os
import select
import signal
import stat
import struct
import sys
import threading
import time

# tarfile, pty, termios and fcntl are imported where used: a box starts faster without them.

PROTOCOL_VERSION = 1
HEADER = struct.Struct(">II")
MAX_JSON = 8 * 1024 * 1024
MAX_PAYLOAD = 64 * 1024 * 1024
CHUNK = 64 * 1024
DRAIN_AFTER_EXIT = 2.0
RUNTIMES = {"python": "python3", "node": "node", "bash": "bash", "sh": "sh"}
CODE_SUFFIX = {"python": ".py", "node": ".js", "bash": ".sh", "sh": ".sh"}


# Children whose status a call's thread collects; the orphan reaper leaves them alone.
WAITED = set()
REAP_LOCK = threading.Lock()


def reap_orphans():
    """As the box's pid 1 we inherit orphans; reap the zombies among them."""
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


def reaper(wakeup_fd):
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


def box_pids():
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


class Invalid(Exception):
    """A request that cannot run as given (the host raises InvalidRequest)."""


class SpawnError(Exception):
    """The program could not be started (not found, not executable)."""


class Channel:
    """Frames in from ``fd_in``, out to ``fd_out``; writes from many threads are serialised."""

    def __init__(self, fd_in, fd_out):
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.lock = threading.Lock()

    def send(self, msg, payload=b""):
        body = json.dumps(msg, separators=(",", ":")).encode()
        frame = HEADER.pack(len(body), len(payload)) + body + payload
        with self.lock:
            view = memoryview(frame)
            while view:
                written = os.write(self.fd_out, view)
                view = view[written:]

    def _read_exactly(self, size):
        parts = []
        while size:
            part = os.read(self.fd_in, min(size, 1 << 20))
            if not part:
                return None
            parts.append(part)
            size -= len(part)
        return b"".join(parts)

    def receive(self):
        header = self._read_exactly(HEADER.size)
        if header is None:
            return None, b""
        json_len, payload_len = HEADER.unpack(header)
        if json_len > MAX_JSON or payload_len > MAX_PAYLOAD:
            raise ValueError("frame too large")
        body = self._read_exactly(json_len)
        payload = self._read_exactly(payload_len) if payload_len else b""
        if body is None or payload is None:
            return None, b""
        return json.loads(body), payload


def set_no_dumpable():
    """Keep processes of the box user from ptracing us or reading /proc/<pid>/fd."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def child_setup():
    """Runs in a forked child before exec: its own session, default signal dispositions."""
    os.setsid()
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)


def kill_group(pgid, sig=signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Call:
    """One process started by ``exec``: its pipes, limits and outcome."""

    def __init__(self, sup, msg, payload):
        self.sup = sup
        self.id = msg["id"]
        self.background = bool(msg.get("background"))
        self.timeout = msg.get("timeout")
        self.idle_timeout = msg.get("idle_timeout")
        self.max_output = int(msg.get("max_output") or 0)
        self.use_pty = bool(msg.get("pty"))
        self.sent = 0
        self.truncated = False
        self.timed_out = False
        self.idle_timed_out = False
        self.last_output = time.monotonic()
        self.started = time.monotonic()
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.buffer = bytearray()  # background output, bounded by max_output
        self.buffer_offset = 0  # bytes dropped from the front of buffer
        self.exit_msg = None
        self.stdin_w = None
        self.stdin_queue = None  # set when the call gets stdin: a writer thread owns stdin_w
        self.pty_master = None
        self.argv = self._argv(msg, payload)
        self.cwd = msg.get("cwd") or "/"
        self.env = dict(sup.env)
        self.env.update(msg.get("env") or {})
        self.stdin_mode = msg.get("stdin", "null")

    def _argv(self, msg, payload):
        argv = list(msg["argv"])
        runtime = msg.get("runtime")
        if runtime:
            code_dir = os.path.join("/tmp", ".golem-code")
            os.makedirs(code_dir, mode=0o700, exist_ok=True)
            path = os.path.join(code_dir, str(self.id) + CODE_SUFFIX.get(runtime, ""))
            with open(path, "wb") as handle:
                handle.write(payload)
            argv.append(path)
        return argv

    def start(self):
        cwd = os.path.realpath(self.cwd)
        root = self.sup.workspace_root
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

    def _start_pipes(self, cwd):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if self.stdin_mode == "pipe":
            in_r, in_w = os.pipe()
        else:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), None
        try:
            with REAP_LOCK:
                self.pid = spawn_fast(self.argv, cwd, self.env, in_r, out_w, err_w)
                WAITED.add(self.pid)
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        self.stdin_w = in_w
        self.outputs = {out_r: "stdout", err_r: "stderr"}

    def _start_pty(self, cwd):
        import pty

        master, slave = pty.openpty()
        try:
            with REAP_LOCK:
                self.pid = spawn(self.argv, cwd, self.env, slave, slave, slave, ctty=True)
                WAITED.add(self.pid)
        finally:
            os.close(slave)
        self.pty_master = master
        self.stdin_w = os.dup(master)
        self.outputs = {master: "stdout"}

    def _emit(self, stream, data):
        with self.lock:
            room = self.max_output - self.sent if self.max_output else len(data)
            if room <= 0:
                self.truncated = True
                return
            if len(data) > room:
                data = data[:room]
                self.truncated = True
            self.sent += len(data)
            if self.background:
                self.buffer += data
                return
        self.sup.channel.send({"op": "out", "id": self.id, "stream": stream}, data)

    def _next_timeout(self, now, drain_until):
        deadlines = []
        if drain_until is not None:
            deadlines.append(drain_until)
        else:
            if self.timeout:
                deadlines.append(self.started + self.timeout)
            if self.idle_timeout:
                deadlines.append(self.last_output + self.idle_timeout)
        return max(min(deadlines) - now, 0) if deadlines else None

    def _check_limits(self, now):
        if self.timeout and now - self.started >= self.timeout:
            self.timed_out = True
        elif self.idle_timeout and now - self.last_output >= self.idle_timeout:
            self.idle_timed_out = True
        else:
            return
        kill_group(self.pgid)

    def _run(self):
        """One thread per call: its output pipes and its exit, multiplexed with poll."""
        poller = select.poll()
        watched = dict(self.outputs)
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
                if data:
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
        self._finish(status, usage)

    def _finish(self, status, usage):
        self.close_stdin(eof=False)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = 128 + sig if sig is not None else os.WEXITSTATUS(status)
        self.exit_msg = {
            "op": "exit",
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
        self.sup.finished(self)

    def write_stdin(self, data):
        """Queue bytes for the call's stdin; a call that does not read blocks only itself."""
        if self.stdin_w is None:
            return
        if self.stdin_queue is None:
            import queue

            self.stdin_queue = queue.SimpleQueue()
            threading.Thread(target=self._write_stdin, daemon=True).start()
        self.stdin_queue.put(data)

    def _write_stdin(self):
        fd = self.stdin_w
        broken = False
        while True:
            data = self.stdin_queue.get()
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

    def close_stdin(self, eof=True):
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

    def resize(self, rows, cols):
        if self.pty_master is None:
            return
        import fcntl
        import termios

        fcntl.ioctl(self.pty_master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def describe(self):
        return {
            "id": self.id,
            "argv": self.argv,
            "pid": self.pid,
            "running": not self.done.is_set(),
            "exit_code": self.exit_msg["exit_code"] if self.exit_msg else None,
            "output_bytes": self.buffer_offset + len(self.buffer),
        }


def exit_watch(pid):
    """A descriptor that becomes readable when ``pid`` exits (a pidfd, or a pipe)."""
    if hasattr(os, "pidfd_open"):
        try:
            return os.pidfd_open(pid)
        except OSError:
            pass
    read_fd, write_fd = os.pipe()

    def watch():  # pragma: no cover - kernels before 5.3, Python before 3.9
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        os.close(write_fd)

    threading.Thread(target=watch, daemon=True).start()
    return read_fd


def which(program, path):
    """The first executable ``program`` on ``path`` (shutil.which without its imports)."""
    for directory in (path or os.defpath).split(os.pathsep):
        candidate = os.path.join(directory, program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve(argv, env):
    program = argv[0] if "/" in argv[0] else which(argv[0], env.get("PATH"))
    if program is None:
        raise SpawnError(f"{argv[0]}: command not found")
    return program


def spawn_fast(argv, cwd, env, stdin_fd, stdout_fd, stderr_fd):
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


OOM_SCORE_FD = []  # opened in main() while still dumpable; /proc/self is ours then


def set_oom_score_adj(value):
    for fd in OOM_SCORE_FD:
        try:
            os.write(fd, str(value).encode())
        except OSError:
            pass


def spawn(argv, cwd, env, stdin_fd, stdout_fd, stderr_fd, ctty=False):
    """fork+exec (for a pty: the child must take it as its terminal); raises SpawnError."""
    import fcntl  # before fork: a child must not take the import lock
    import termios

    program = resolve(argv, env)
    err_r, err_w = os.pipe()
    set_oom_score_adj(1000)  # inherited by the child, as in spawn_fast
    try:
        pid = os.fork()
    except OSError:
        set_oom_score_adj(0)
        raise
    if pid != 0:
        set_oom_score_adj(0)
    if pid == 0:  # child: only async-signal-safe-ish work until exec
        try:
            os.close(err_r)
            os.dup2(stdin_fd, 0)
            os.dup2(stdout_fd, 1)
            os.dup2(stderr_fd, 2)
            child_setup()
            if ctty:
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            os.chdir(cwd)
            os.closerange(3, err_w)
            os.closerange(err_w + 1, 65536)
            os.execve(program, argv, env)
        except BaseException as exc:  # report to the parent, never return into its code
            try:
                os.write(err_w, (f"{type(exc).__name__}: {exc}").encode()[:4000])
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


BRIDGE_CHUNK = 256 * 1024
BRIDGE_MAX_CONNECTIONS = 64


def bridge_pump(source, sink):
    """Copy one direction until its end; an error ends both directions."""
    import socket

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


def bridge_connection(conn, path, slots):
    """One box connection to the loopback port, joined to a new one to the proxy."""
    import socket

    proxy = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proxy.connect(path)
        other = threading.Thread(target=bridge_pump, args=(proxy, conn), daemon=True)
        other.start()
        bridge_pump(conn, proxy)
        other.join()
    except (OSError, RuntimeError):
        pass
    finally:
        conn.close()
        proxy.close()
        slots.release()


def bridge_accept(listener, path):
    """Accept box connections on the loopback port for as long as the box lives."""
    slots = threading.BoundedSemaphore(BRIDGE_MAX_CONNECTIONS)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        if not slots.acquire(blocking=False):
            conn.close()  # a box holding every slot only starves itself
            continue
        try:
            threading.Thread(
                target=bridge_connection, args=(conn, path, slots), daemon=True
            ).start()
        except RuntimeError:  # no threads left (pids limit)
            conn.close()
            slots.release()


class Transfer:
    """A put in progress: chunks from the host written to a file or a tar extractor."""

    def __init__(self, sup, msg):
        self.sup = sup
        self.id = msg["id"]
        self.path = msg["path"]
        self.format = msg.get("format", "raw")
        self.error = None
        parent = self.path if self.format == "tar" else os.path.dirname(self.path)
        os.makedirs(parent or "/", exist_ok=True)
        if self.format == "raw":
            mode = msg.get("mode")
            mode = 0o644 if mode is None else int(mode)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            self.thread = None
        else:
            read_fd, self.fd = os.pipe()
            self.thread = threading.Thread(target=self._extract, args=(read_fd,), daemon=True)
            self.thread.start()

    def _extract(self, read_fd):
        import tarfile

        with os.fdopen(read_fd, "rb") as source:
            try:
                with tarfile.open(fileobj=source, mode="r|*") as archive:
                    # The host's tree as it is: its links (absolute ones too) are data
                    # here; the tar filter still keeps every entry inside self.path.
                    if hasattr(tarfile, "tar_filter"):
                        archive.extractall(self.path, filter="tar")
                    else:  # pragma: no cover - Python < 3.8.17 in the image
                        archive.extractall(self.path)
            except Exception as exc:
                self.error = str(exc)
            while source.read(CHUNK):  # keep the writer from blocking after an error
                pass

    def write(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def finish(self):
        os.close(self.fd)
        if self.thread is not None:
            self.thread.join()
        if self.error:
            raise ValueError(self.error)


class NotRegularFile(ValueError):
    """A download asked for a device, FIFO or socket (``path`` in the error frame)."""


class TransferCancelled(Exception):
    """The host stopped reading a download (``cancel``): send no more of it."""


class Flow:
    """A download's credit: the host grants chunks (``window``, then ``credit``) as it
    consumes them, so a box can never send faster than the host takes in."""

    def __init__(self, window):
        self.credits = window  # None: unlimited
        self.cancelled = False
        self.cond = threading.Condition()

    def take(self):
        with self.cond:
            while self.credits is not None and self.credits <= 0 and not self.cancelled:
                self.cond.wait()
            if self.cancelled:
                raise TransferCancelled()
            if self.credits is not None:
                self.credits -= 1

    def give(self, count):
        with self.cond:
            if self.credits is not None:
                self.credits += count
            self.cond.notify_all()

    def cancel(self):
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()


class ChunkWriter:
    """A file-like sink that sends what it is given as ``chunk`` frames."""

    def __init__(self, sup, call_id):
        self.sup = sup
        self.id = call_id
        self.pending = bytearray()

    def write(self, data):
        self.pending += data
        if len(self.pending) >= CHUNK:
            self.flush()
        return len(data)

    def flush(self):
        if self.pending:
            self.sup.send_chunk(self.id, bytes(self.pending))
            self.pending = bytearray()


class Supervisor:
    """Dispatches host requests; each long operation runs on a thread of its own."""

    def __init__(self, channel):
        self.channel = channel
        self.env = dict(os.environ)
        self.base_env = dict(self.env)
        self.workspace_root = os.environ.get("GOLEM_WORKSPACE", "/workspace")
        self.calls = {}
        self.transfers = {}
        self.flows = {}  # downloads in progress, by id
        self.calls_lock = threading.Lock()

    def finished(self, call):
        if not call.background:
            self.channel.send(call.exit_msg)
            with self.calls_lock:
                self.calls.pop(call.id, None)

    def serve(self):
        while True:
            msg, payload = self.channel.receive()
            if msg is None:
                return
            try:
                self.dispatch(msg, payload)
            except Exception as exc:
                self.channel.send(
                    {
                        "op": "error",
                        "id": msg.get("id"),
                        "kind": type(exc).__name__,
                        "message": str(exc),
                    }
                )

    def dispatch(self, msg, payload):
        op = msg.get("op")
        handler = getattr(self, "op_" + str(op), None)
        if handler is None:
            raise ValueError(f"unknown op {op!r}")
        handler(msg, payload)

    def op_hello(self, msg, payload):
        runtimes = {}
        for name, program in RUNTIMES.items():
            found = which(program, self.env.get("PATH"))
            if found:
                runtimes[name] = found
        self.channel.send(
            {
                "op": "hello",
                "id": msg.get("id"),
                "version": PROTOCOL_VERSION,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "gid": os.getgid(),
                "python": sys.version.split()[0],
                "runtimes": runtimes,
            }
        )

    def op_configure(self, msg, payload):
        self.env = dict(self.base_env)
        self.env.update(msg.get("env") or {})
        home = self.env.get("HOME")
        if home:
            os.makedirs(home, exist_ok=True)
        self.channel.send({"op": "done", "id": msg.get("id")})

    def op_bridge(self, msg, payload):
        """Listen on 127.0.0.1:port and join each connection to the unix socket ``path``
        (the host's egress proxy): the only way out of a ``filtered`` box."""
        import socket

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(msg["port"])))
        listener.listen(128)
        threading.Thread(
            target=bridge_accept, args=(listener, str(msg["path"])), daemon=True
        ).start()
        self.channel.send({"op": "done", "id": msg.get("id")})

    def op_exec(self, msg, payload):
        call = Call(self, msg, payload)
        with self.calls_lock:
            if call.id in self.calls:
                raise ValueError(f"a call with id {call.id!r} is already running")
            self.calls[call.id] = call
        try:
            call.start()
        except BaseException:
            with self.calls_lock:
                self.calls.pop(call.id, None)
            raise
        self.channel.send({"op": "started", "id": call.id, "pid": call.pid})

    def _call(self, msg):
        call = self.calls.get(msg.get("target", msg.get("id")))
        if call is None:
            raise KeyError("no process with id {!r}".format(msg.get("target", msg.get("id"))))
        return call

    def op_stdin(self, msg, payload):
        call = self.calls.get(msg.get("id"))
        if call is not None:
            call.write_stdin(payload)

    def op_stdin_close(self, msg, payload):
        call = self.calls.get(msg.get("id"))
        if call is not None:
            call.close_stdin()

    def op_resize(self, msg, payload):
        call = self.calls.get(msg.get("id"))
        if call is not None:
            call.resize(int(msg["rows"]), int(msg["cols"]))

    def op_signal(self, msg, payload):
        call = self._call(msg)
        if not call.done.is_set():
            kill_group(call.pgid, int(msg.get("signal", signal.SIGTERM)))
        if msg.get("reply"):
            self.channel.send({"op": "done", "id": msg.get("reply")})

    def op_procs(self, msg, payload):
        with self.calls_lock:
            procs = [c.describe() for c in self.calls.values() if c.background]
        self.channel.send({"op": "procs", "id": msg.get("id"), "procs": procs})

    def op_proc_output(self, msg, payload):
        call = self._call(msg)
        with call.lock:
            start = max(int(msg.get("offset") or 0) - call.buffer_offset, 0)
            data = bytes(call.buffer[start:])
            offset = call.buffer_offset + len(call.buffer)
        self.channel.send(
            {
                "op": "proc_output",
                "id": msg.get("id"),
                "offset": offset,
                "running": not call.done.is_set(),
                "exit": call.exit_msg,
                "truncated": call.truncated,
            },
            data,
        )

    def op_wait(self, msg, payload):
        call = self._call(msg)
        reply = msg.get("id")

        def wait():
            call.done.wait(msg.get("timeout"))
            self.channel.send({"op": "waited", "id": reply, "exit": call.exit_msg})

        threading.Thread(target=wait, daemon=True).start()

    def op_forget(self, msg, payload):
        call = self._call(msg)
        if not call.done.is_set():
            kill_group(call.pgid)
            call.done.wait(DRAIN_AFTER_EXIT)
        with self.calls_lock:
            self.calls.pop(call.id, None)
        self.channel.send({"op": "done", "id": msg.get("id")})

    def op_put(self, msg, payload):
        self.transfers[msg["id"]] = Transfer(self, msg)

    def op_chunk(self, msg, payload):
        transfer = self.transfers.get(msg["id"])
        if transfer is not None:
            transfer.write(payload)

    def op_end(self, msg, payload):
        transfer = self.transfers.pop(msg["id"], None)
        if transfer is None:
            raise KeyError("no transfer with id {!r}".format(msg["id"]))
        transfer.finish()
        self.channel.send({"op": "done", "id": msg["id"]})

    def op_get(self, msg, payload):
        window = msg.get("window")
        self.flows[msg["id"]] = Flow(int(window) if window is not None else None)
        threading.Thread(target=self._send_path, args=(msg,), daemon=True).start()

    def op_credit(self, msg, payload):
        """The host consumed ``count`` chunks of a download: that many more may go."""
        flow = self.flows.get(msg["id"])
        if flow is not None:
            flow.give(int(msg.get("count", 0)))

    def op_cancel(self, msg, payload):
        """The host stopped reading a download: its thread stops at the next chunk."""
        flow = self.flows.get(msg["id"])
        if flow is not None:
            flow.cancel()

    def send_chunk(self, call_id, data):
        flow = self.flows.get(call_id)
        if flow is not None:
            flow.take()
        self.channel.send({"op": "chunk", "id": call_id}, data)

    def _send_path(self, msg):
        call_id = msg["id"]
        path = msg["path"]
        try:
            if msg.get("format", "raw") == "raw":
                self._send_file(call_id, path)
            else:
                skip_git = set(str(d).strip("/") for d in msg.get("skip_git") or ())
                self._send_tar(call_id, path, msg.get("paths"), skip_git)
            self.channel.send({"op": "end", "id": call_id})
        except TransferCancelled:
            pass
        except Exception as exc:
            kind = type(exc).__name__
            self.channel.send(
                {"op": "error", "id": call_id, "kind": kind, "message": str(exc), "path": path}
            )
        finally:
            self.flows.pop(call_id, None)

    def _send_file(self, call_id, path):
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files go out.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NotRegularFile(path)
            os.set_blocking(fd, True)
            self.channel.send({"op": "meta", "id": call_id, "size": info.st_size})
            while True:
                data = handle.read(CHUNK)
                if not data:
                    break
                self.send_chunk(call_id, data)

    def _send_tar(self, call_id, path, paths, skip_git):
        """``path`` as a tar stream; with ``paths`` (relative to it), only those that exist
        (directories with all they hold), each once; the ``.git`` of each directory in
        ``skip_git`` ("" is ``path`` itself) left out."""
        import tarfile

        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        self.channel.send({"op": "meta", "id": call_id})

        def entry(info):
            """Each file whole (a second hard link to it too), skipped .git left out."""
            name = info.name[2:] if info.name.startswith("./") else info.name
            names = name.split("/")
            for index, part in enumerate(names):
                if part == ".git" and "/".join(names[:index]) in skip_git:
                    return None
            if info.islnk():
                info.type, info.linkname = tarfile.REGTYPE, ""
                info.size = os.lstat(os.path.join(path, name)).st_size
            return info

        writer = ChunkWriter(self, call_id)
        with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as archive:
            if paths is None:
                archive.add(path, arcname=".", filter=entry)
            else:
                added = []
                for name in sorted(set(str(p).strip("/") for p in paths)):
                    if not name or any(name.startswith(d + "/") for d in added):
                        continue
                    full = os.path.join(path, name)
                    if os.path.lexists(full):
                        archive.add(full, arcname=name, filter=entry)
                        if os.path.isdir(full) and not os.path.islink(full):
                            added.append(name)
        writer.flush()

    def op_reset(self, msg, payload):
        """Kill every process but ourselves and empty the writable places (warm pools)."""
        with self.calls_lock:
            calls = list(self.calls.values())
            self.calls.clear()
        for call in calls:
            kill_group(call.pgid)
        for _ in range(1000):  # a process forking while we kill shows up next round
            alive = box_pids()
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.001)
        for call in calls:
            call.done.wait(DRAIN_AFTER_EXIT)
        remove_sysv_ipc()
        for root in msg.get("paths") or []:
            for name in os.listdir(root):
                target = os.path.join(root, name)
                if os.path.isdir(target) and not os.path.islink(target):
                    import shutil

                    shutil.rmtree(target, ignore_errors=True)
                else:
                    try:
                        os.unlink(target)
                    except OSError:
                        pass
        self.env = dict(self.base_env)
        self.channel.send({"op": "done", "id": msg.get("id")})


def remove_sysv_ipc():
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


def main():
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
    Supervisor(Channel(fd_in, fd_out)).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
