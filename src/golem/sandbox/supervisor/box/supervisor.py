"""Dispatch: each host request to its handler; long work runs on threads of its own."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from . import framing as op
from .calls import DRAIN_AFTER_EXIT, Call, Invalid, UnknownProcess
from .reaping import box_pids
from .spawning import kill_group, which

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from .channel import Channel
    from .transfer import Download, Upload

    Handler = Callable[[dict[str, Any], bytes], None]

MAX_WAITS = 32  # waits on background processes at once: each is a thread, within the pids
WAIT_SLICE = 0.5  # how soon a cancelled wait's thread ends

RUNTIMES = {"python": "python3", "node": "node", "bash": "bash", "sh": "sh"}


class Supervisor:
    """The box's side of one connection: its calls, transfers and environment."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.env = dict(os.environ)
        self.base_env = dict(self.env)
        self.workspace_root = os.environ.get("GOLEM_WORKSPACE", "/workspace")
        self.calls: dict[str, Call] = {}
        self.calls_lock = threading.Lock()
        self.uploads: dict[str, Upload] = {}
        self.downloads: dict[str, Download] = {}
        self.waits: dict[str, threading.Event] = {}  # a wait's id -> set when cancelled
        self.ipc_marks: dict[str, int] = {}  # the last IPC id of each kind a wipe saw
        self.handlers: dict[str, Handler] = {
            op.HELLO: self.op_hello,
            op.CONFIGURE: self.op_configure,
            op.BRIDGE: self.op_bridge,
            op.EXEC: self.op_exec,
            op.TOOL: self.op_tool,
            op.STDIN: self.op_stdin,
            op.STDIN_CLOSE: self.op_stdin_close,
            op.RESIZE: self.op_resize,
            op.SIGNAL: self.op_signal,
            op.PROCS: self.op_procs,
            op.PROC_OUTPUT: self.op_proc_output,
            op.WAIT: self.op_wait,
            op.FORGET: self.op_forget,
            op.PUT: self.op_put,
            op.CHUNK_OP: self.op_chunk,
            op.END: self.op_end,
            op.GET: self.op_get,
            op.CREDIT: self.op_credit,
            op.CANCEL: self.op_cancel,
            op.RESET: self.op_reset,
        }

    def serve(self) -> None:
        """Answer requests until the host closes the channel."""
        while True:
            msg, payload = self.channel.receive()
            if msg is None:
                return
            handler = self.handlers.get(str(msg.get("op")))
            try:
                if handler is None:
                    raise ValueError("unknown op {!r}".format(msg.get("op")))
                handler(msg, payload)
            except Exception as exc:
                self.channel.send_error(msg.get("id"), exc)

    def done(self, msg: dict[str, Any]) -> None:
        self.channel.send({"op": op.DONE, "id": msg.get("id")})

    def op_hello(self, msg: dict[str, Any], payload: bytes) -> None:
        runtimes = {}
        for name, program in RUNTIMES.items():
            found = which(program, self.env.get("PATH"))
            if found:
                runtimes[name] = found
        self.channel.send(
            {
                "op": op.HELLO,
                "id": msg.get("id"),
                "version": op.PROTOCOL_VERSION,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "gid": os.getgid(),
                "python": sys.version.split()[0],
                "runtimes": runtimes,
            }
        )

    def op_configure(self, msg: dict[str, Any], payload: bytes) -> None:
        self.env = dict(self.base_env)
        self.env.update(msg.get("env") or {})
        home = self.env.get("HOME")
        if home:
            os.makedirs(home, exist_ok=True)
        self.done(msg)

    def op_bridge(self, msg: dict[str, Any], payload: bytes) -> None:
        from . import bridge

        bridge.listen(int(msg["port"]), str(msg["path"]))
        self.done(msg)

    # Calls ------------------------------------------------------------------------------

    def op_exec(self, msg: dict[str, Any], payload: bytes) -> None:
        self._start(Call(self.channel, msg, payload, self.env, self.finished))

    def op_tool(self, msg: dict[str, Any], payload: bytes) -> None:
        """One of the file tools' requests, run as a call by a forked child of ours."""
        from . import tools

        request = msg.get("request")
        if not isinstance(request, dict) or request.get("op") not in tools.OPS:
            raise Invalid("a tool call needs a request whose op is one of " + ", ".join(tools.OPS))
        call_msg = dict(msg, argv=["tool", request["op"]], background=False, pty=False)
        work = lambda: tools.run(request)  # noqa: E731 - runs in the child only
        self._start(Call(self.channel, call_msg, b"", self.env, self.finished, work))

    def _start(self, call: Call) -> None:
        with self.calls_lock:
            if call.id in self.calls:
                raise ValueError(f"a call with id {call.id!r} is already running")
            self.calls[call.id] = call
        try:
            call.start(self.workspace_root)
        except BaseException:
            with self.calls_lock:
                self.calls.pop(call.id, None)
            raise
        self.channel.send({"op": op.STARTED, "id": call.id, "pid": call.pid})

    def finished(self, call: Call) -> None:
        if not call.background:
            assert call.exit_msg is not None
            self.channel.send(call.exit_msg)
            with self.calls_lock:
                self.calls.pop(call.id, None)

    def _target(self, msg: dict[str, Any]) -> Call:
        target = msg.get("target", msg.get("id"))
        call = self.calls.get(str(target))
        if call is None:
            raise UnknownProcess(str(target))
        return call

    def op_stdin(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self.calls.get(str(msg.get("id")))
        if call is not None:
            call.write_stdin(payload)

    def op_stdin_close(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self.calls.get(str(msg.get("id")))
        if call is not None:
            call.close_stdin()

    def op_resize(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self.calls.get(str(msg.get("id")))
        if call is not None:
            call.resize(int(msg["rows"]), int(msg["cols"]))

    def op_signal(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self._target(msg)
        if not call.done.is_set():
            kill_group(call.pgid, int(msg.get("signal", signal.SIGTERM)))
        if msg.get("reply"):
            self.channel.send({"op": op.DONE, "id": msg.get("reply")})

    def op_procs(self, msg: dict[str, Any], payload: bytes) -> None:
        with self.calls_lock:
            procs = [c.describe() for c in self.calls.values() if c.background]
        self.channel.send({"op": op.PROCS, "id": msg.get("id"), "procs": procs})

    def op_proc_output(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self._target(msg)
        start, end, data = call.read_output(int(msg.get("offset") or 0))
        reply = {
            "op": op.PROC_OUTPUT,
            "id": msg.get("id"),
            "start": start,
            "offset": end,
            "running": not call.done.is_set(),
            "exit": call.exit_msg,
            "truncated": call.truncated,
        }
        self.channel.send(reply, data)

    def op_wait(self, msg: dict[str, Any], payload: bytes) -> None:
        """Answer when the process ends or the timeout passes; a wait the host cancels
        (its client left) ends with no answer. At most MAX_WAITS run at once."""
        call = self._target(msg)
        reply = str(msg.get("id"))
        if len(self.waits) >= MAX_WAITS:
            raise Invalid(
                f"{MAX_WAITS} waits on background processes run in this box already; "
                "wait for one to end, or poll the process's output instead"
            )
        cancelled = self.waits[reply] = threading.Event()
        timeout = msg.get("timeout")
        deadline = None if timeout is None else time.monotonic() + float(timeout)

        def wait() -> None:
            try:
                while not cancelled.is_set():  # a slice at a time, to see a cancel
                    left = None if deadline is None else max(deadline - time.monotonic(), 0)
                    last = left is not None and left <= WAIT_SLICE
                    if call.done.wait(left if last else WAIT_SLICE) or last:
                        self.channel.send({"op": op.WAITED, "id": reply, "exit": call.exit_msg})
                        return
            finally:
                self.waits.pop(reply, None)

        threading.Thread(target=wait, daemon=True).start()

    def op_forget(self, msg: dict[str, Any], payload: bytes) -> None:
        call = self._target(msg)
        if not call.done.is_set():
            kill_group(call.pgid)
            call.done.wait(DRAIN_AFTER_EXIT)
        with self.calls_lock:
            self.calls.pop(call.id, None)
        self.done(msg)

    # Files ------------------------------------------------------------------------------

    def op_put(self, msg: dict[str, Any], payload: bytes) -> None:
        from .transfer import Upload

        self.uploads[str(msg["id"])] = Upload(msg)

    def op_chunk(self, msg: dict[str, Any], payload: bytes) -> None:
        upload = self.uploads.get(str(msg["id"]))
        if upload is not None:
            upload.write(payload)

    def op_end(self, msg: dict[str, Any], payload: bytes) -> None:
        """An upload's body ended: it is moved into place, and ``done`` (after a failed
        write the host has its error already, and gets nothing more)."""
        upload = self.uploads.pop(str(msg["id"]), None)
        if upload is None:
            raise KeyError("no transfer with id {!r}".format(msg["id"]))
        if not upload.failed:
            upload.finish()
            self.done(msg)

    def op_get(self, msg: dict[str, Any], payload: bytes) -> None:
        from .transfer import Download

        download = self.downloads[str(msg["id"])] = Download(self.channel, msg)

        def run() -> None:
            try:
                download.run()
            finally:
                self.downloads.pop(download.id, None)

        download.thread = threading.Thread(target=run, daemon=True)
        download.thread.start()

    def op_credit(self, msg: dict[str, Any], payload: bytes) -> None:
        """The host consumed ``count`` chunks of a download: that many more may go."""
        if (wait := self.waits.get(str(msg["id"]))) is not None:
            wait.set()
        download = self.downloads.get(str(msg["id"]))
        if download is not None:
            download.flow.give(int(msg.get("count", 0)))

    def op_cancel(self, msg: dict[str, Any], payload: bytes) -> None:
        """The host stopped a transfer: a download's thread stops at its next chunk, an
        upload's body is removed (it never reaches its target)."""
        download = self.downloads.get(str(msg["id"]))
        if download is not None:
            download.flow.cancel("the host stopped reading it")
        upload = self.uploads.pop(str(msg["id"]), None)
        if upload is not None:
            upload.abort()

    def end_transfers(self, why: str) -> None:
        """Stop every transfer (a reset: the session that started them has ended)."""
        downloads = list(self.downloads.values())
        for download in downloads:
            download.flow.cancel(why)
        uploads = list(self.uploads.values())
        self.uploads.clear()
        for upload in uploads:
            upload.abort()
        for download in downloads:
            if download.thread is not None:
                download.thread.join(DRAIN_AFTER_EXIT)

    # Warm pools -------------------------------------------------------------------------

    def op_reset(self, msg: dict[str, Any], payload: bytes) -> None:
        """End every transfer, kill every process but ourselves and empty the writable
        places (warm pools)."""
        self.end_transfers("the box's session ended")
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
        from .cleanup import empty, remove_sysv_ipc

        remove_sysv_ipc(self.ipc_marks)
        empty(msg.get("paths") or [])
        self.env = dict(self.base_env)
        self.done(msg)
