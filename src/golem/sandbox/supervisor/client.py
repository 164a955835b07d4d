"""Host side of the supervisor protocol: frames over a byte pipe, routed by call id.

Everything the supervisor says is treated as untrusted: a process in the box can kill or
impersonate it, so frame sizes are capped and malformed frames end the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import json
from collections.abc import Callable

from golem.core.errors import (
    BoxCrashed,
    BoxDiskFull,
    BoxEnded,
    ExecTimeout,
    InvalidRequest,
    PathNotFound,
    PathRefused,
    ProcessNotFound,
    ProtocolError,
    SandboxError,
    SessionNotFound,
    UnsafeBoxOutput,
)
from golem.sandbox.supervisor.box.framing import (
    HEADER,
    MAX_JSON,
    MAX_PAYLOAD,
    check_sizes,
    encode,
)
from golem.sandbox.supervisor.messages import (
    Cancel,
    Error,
    Hello,
    HelloRequest,
    Reply,
    Request,
    parse_reply,
)

__all__ = ["Frame", "SessionClient", "SupervisorClient", "raise_if_error"]

Frame = tuple[Reply, bytes]
"""A decoded frame: its message, validated, and its raw payload."""


class SupervisorClient:
    """Multiplexes calls over one supervisor pipe; each call id gets its own queue."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        describe_loss: Callable[[], str] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._describe_start_failure = describe_loss or (lambda: "the box's supervisor exited")
        self._queues: dict[str, asyncio.Queue[Frame | None]] = {}
        self._buffered: dict[str, list[int]] = {}  # call id -> [bytes held, most allowed]
        self._ids = itertools.count(1)
        self._reader_task: asyncio.Task[None] | None = None
        self._lost: str | None = None
        self._on_lost: list[Callable[[str], None]] = []
        self.hello: Hello | None = None

    async def start(self, timeout: float) -> Hello:
        """Start routing frames and complete the hello handshake."""
        self._reader_task = asyncio.create_task(self._route())
        try:
            async with asyncio.timeout(timeout):  # not wait_for, which can lose a cancel
                reply, _ = await self.request(HelloRequest())
        except TimeoutError as exc:
            raise ExecTimeout(
                f"the box did not answer within {timeout:.0f}s of starting; "
                "check that its image has a working python3"
            ) from exc
        if not isinstance(reply, Hello):
            raise ProtocolError(f"the box answered hello with {type(reply).__name__}")
        self.hello = reply
        return reply

    def _describe_loss(self) -> str:
        # Before hello, the backend's own words (bubblewrap's errors) explain a failed
        # start. After it, that text could come from the box's processes: do not relay it.
        if self.hello is None:
            return self._describe_start_failure()
        return (
            "the box's supervisor went away (the box was stopped, ran out of memory, or a "
            "process in it killed the supervisor)"
        )

    @property
    def lost(self) -> str | None:
        """Why the connection ended, or None while it is up."""
        return self._lost

    def on_lost(self, callback: Callable[[str], None]) -> None:
        """Have ``callback(why)`` called once, when the connection ends."""
        self._on_lost.append(callback)

    def new_id(self) -> str:
        """A fresh call id, unique on this connection."""
        return f"c{next(self._ids)}"

    def open(self, call_id: str, *, max_buffered: int | None = None) -> asyncio.Queue[Frame | None]:
        """Register a call id; its frames (then ``None`` if the box goes away) arrive here.
        With ``max_buffered``, the box may never have more than that many payload bytes of
        the call waiting to be consumed (``consumed``): past it, it broke the flow control
        it was granted, and the connection is dropped as a protocol violation."""
        queue: asyncio.Queue[Frame | None] = asyncio.Queue()
        if self._lost is not None:
            queue.put_nowait(None)
        self._queues[call_id] = queue
        if max_buffered is not None:
            self._buffered[call_id] = [0, max_buffered]
        return queue

    def consumed(self, call_id: str, size: int) -> None:
        """``size`` payload bytes of a call were taken off its queue."""
        if (held := self._buffered.get(call_id)) is not None:
            held[0] -= size

    def close_call(self, call_id: str) -> None:
        """Stop routing frames for a call; late frames for it are dropped."""
        self._queues.pop(call_id, None)
        self._buffered.pop(call_id, None)

    async def send(self, call_id: str, message: Request, payload: bytes = b"") -> None:
        """Send one frame (a whole frame is written at once, so frames never interleave)."""
        if self._lost is not None:
            raise BoxCrashed(self._lost)
        frame = encode(message.to_json(call_id), payload)
        json_len = len(frame) - HEADER.size - len(payload)
        if not check_sizes(json_len, len(payload)):  # the box would end the connection
            raise InvalidRequest(
                f"the request is too large for the box ({json_len} bytes of fields, at most "
                f"{MAX_JSON}; {len(payload)} bytes of data, at most {MAX_PAYLOAD}); send "
                "large data as files (upload, put_file) rather than in a call's fields"
            )
        try:  # a pipe the box closed refuses the write itself (RuntimeError) or the drain
            self._writer.write(frame)
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self._fail_all(self._describe_loss())  # the pipe is gone: so is the box
            raise BoxCrashed(self._lost or self._describe_loss()) from exc

    async def request(
        self, message: Request, payload: bytes = b"", *, call_id: str | None = None
    ) -> Frame:
        """Send a request and return its single reply; an ``error`` reply is raised."""
        call_id = call_id or self.new_id()
        queue = self.open(call_id)
        try:
            await self.send(call_id, message, payload)
            frame = await queue.get()
        finally:
            self.close_call(call_id)
        if frame is None:
            raise BoxCrashed(self._lost or self._describe_loss())
        raise_if_error(frame)
        return frame

    async def close(self) -> None:
        """Close the pipe and stop the router."""
        with contextlib.suppress(Exception):
            self._writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
        self._fail_all("the box was closed")

    async def _route(self) -> None:
        try:
            while True:
                frame = await self._read_frame()
                if frame is None:
                    break
                call_id, reply, payload = frame
                queue = self._queues.get(call_id)
                if queue is not None:
                    self._hold(call_id, len(payload))
                    queue.put_nowait((reply, payload))
        except (ProtocolError, ConnectionError) as exc:
            self._fail_all(f"{self._describe_loss()} ({exc})")
            return
        self._fail_all(self._describe_loss())

    def _hold(self, call_id: str, size: int) -> None:
        if (held := self._buffered.get(call_id)) is None:
            return
        held[0] += size
        if held[0] > held[1]:
            raise ProtocolError(
                f"the box sent call {call_id} more than the {held[1]} bytes it was granted"
            )

    async def _read_frame(self) -> tuple[str, Reply, bytes] | None:
        """The next frame's call id, message and payload; None at the end of the pipe."""
        try:
            header = await self._reader.readexactly(HEADER.size)
        except asyncio.IncompleteReadError:
            return None
        json_len, payload_len = HEADER.unpack(header)
        if not check_sizes(json_len, payload_len):
            raise ProtocolError(f"oversized frame ({json_len}+{payload_len} bytes)")
        try:
            body = await self._reader.readexactly(json_len)
            payload = await self._reader.readexactly(payload_len) if payload_len else b""
            message = json.loads(body)
        except asyncio.IncompleteReadError:
            return None
        except ValueError as exc:
            raise ProtocolError(f"malformed frame: {exc}") from exc
        if not isinstance(message, dict):
            raise ProtocolError("a frame's message is not a JSON object")
        return str(message.get("id")), parse_reply(message), payload

    def _fail_all(self, reason: str) -> None:
        first = self._lost is None
        if first:
            self._lost = reason
        for queue in self._queues.values():
            queue.put_nowait(None)
        if first:
            for callback in self._on_lost:
                callback(reason)


def raise_if_error(frame: Frame) -> None:
    """Turn an ``error`` frame into the matching GolemError."""
    message = frame[0]
    if not isinstance(message, Error):
        return
    text, kind = message.message, message.kind
    if kind in ("Invalid", "SpawnError"):  # SpawnError: a program that cannot start
        raise InvalidRequest(text)
    if message.errno in (errno.ENOSPC, errno.EDQUOT):
        raise BoxDiskFull(
            f"the box's file system is full ({text}); nothing was written: make room in "
            "the box, write elsewhere, or ask for a larger workspace_size or tmp_size"
        )
    if message.errno == errno.EBUSY:
        raise PathRefused(
            f"that path is in use by the box's system, a mount point ({text}); write "
            "under /workspace or /tmp"
        )
    if message.errno == errno.EROFS:
        raise PathRefused(
            f"that path is on the box's read-only file system ({text}); write under "
            "/workspace or /tmp, or ask for a box with read_only_root = false"
        )
    if kind == "UnknownProcess":
        shown = text if len(text) <= 100 else text[:100] + "..."
        raise ProcessNotFound(
            f"no background process {shown!r} in this box; list the box's processes "
            "(GET /v1/sessions/{id}/processes, or box.processes()) for the ids it has"
        )
    if kind in ("FileNotFoundError", "NotADirectoryError"):
        raise PathNotFound(f"{kind} in the box: {text}")
    if kind in ("IsADirectoryError", "PermissionError", "FileExistsError") or (
        message.errno in (errno.ENAMETOOLONG, errno.ELOOP)
    ):
        raise PathRefused(f"{kind} in the box: {text}")
    if kind == "NotRegularFile":
        raise UnsafeBoxOutput(
            message.path,
            "it is not a regular file (a device, FIFO or socket); only regular files are "
            "downloaded",
            "takeback.kind",
        )
    if kind == "LongerThanItsSize":
        raise UnsafeBoxOutput(
            message.path,
            "it holds more than its size says (a /proc or /sys file, or one still being "
            "written); only regular files, read as their size says, are downloaded: copy "
            "it to a file in the box first",
            "takeback.kind",
        )
    raise SandboxError(f"{kind} in the box: {text}")


class SessionClient:
    """One session's view of a box's connection, shared by every handle of that session.

    A pooled box outlives its sessions; once a session ends, its handles must not reach
    the box that now serves somebody else, so every request goes through ``end``'s check.
    """

    def __init__(self, client: SupervisorClient, box_id: str) -> None:
        self._client = client
        self._box_id = box_id
        self.active = True

    def end(self) -> None:
        """Refuse everything from now on."""
        self.active = False

    def _check(self) -> None:
        if self.active:
            return
        ended = f"the session of box {self._box_id} has ended"
        if self._client.lost is not None:  # with its box (410), not by its client (404)
            raise BoxEnded(f"{ended} ({self._client.lost}); start a new one")
        raise SessionNotFound(f"{ended}; start a new one")

    @property
    def hello(self) -> Hello | None:
        """The box's hello."""
        return self._client.hello

    @property
    def lost(self) -> str | None:
        """Why the connection ended, or None."""
        return self._client.lost

    def new_id(self) -> str:
        """A fresh call id."""
        return self._client.new_id()

    def open(self, call_id: str, *, max_buffered: int | None = None) -> asyncio.Queue[Frame | None]:
        """Register a call id (see SupervisorClient.open)."""
        self._check()
        return self._client.open(call_id, max_buffered=max_buffered)

    def consumed(self, call_id: str, size: int) -> None:
        """See SupervisorClient.consumed."""
        self._client.consumed(call_id, size)

    def close_call(self, call_id: str) -> None:
        """Stop routing a call's frames."""
        self._client.close_call(call_id)

    async def send(self, call_id: str, message: Request, payload: bytes = b"") -> None:
        """Send a frame, while the session lasts."""
        self._check()
        await self._client.send(call_id, message, payload)

    async def cancel(self, call_id: str) -> None:
        """Stop one of this session's transfers in the box (once the session has ended
        too: its transfers must not outlive it); nothing once the box is gone."""
        if self._client.lost is None:
            with contextlib.suppress(BoxCrashed):
                await self._client.send(call_id, Cancel())

    async def request(
        self, message: Request, payload: bytes = b"", *, call_id: str | None = None
    ) -> Frame:
        """Send a request and wait for its reply, while the session lasts."""
        self._check()
        return await self._client.request(message, payload, call_id=call_id)
