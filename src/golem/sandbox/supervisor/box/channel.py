"""Frames in from one descriptor and out to another; writes from many threads serialised."""

from __future__ import annotations

import json
import os
import threading

from .framing import ERROR, HEADER, check_sizes, encode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Message = dict[str, Any]


class Channel:
    """The supervisor's end of the protocol: ``receive`` on one thread, ``send`` from any."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.lock = threading.Lock()

    def send(self, message: Message, payload: bytes = b"") -> None:
        frame = encode(message, payload)
        with self.lock:
            view = memoryview(frame)
            while view:
                written = os.write(self.fd_out, view)
                view = view[written:]

    def send_error(self, call_id: object, exc: BaseException, path: str = "") -> None:
        """The ``error`` frame of a failed request: its exception's class name and text,
        the ``path`` it concerns, and an OSError's ``errno`` (the host tells a full disk
        from a read-only one by it)."""
        message: Message = {"op": ERROR, "id": call_id, "kind": type(exc).__name__}
        message["message"] = str(exc)
        if path:
            message["path"] = path
        if isinstance(exc, OSError) and exc.errno is not None:
            message["errno"] = exc.errno
        self.send(message)

    def _read_exactly(self, size: int) -> bytes | None:
        parts: list[bytes] = []
        while size:
            part = os.read(self.fd_in, min(size, 1 << 20))
            if not part:
                return None
            parts.append(part)
            size -= len(part)
        return b"".join(parts)

    def receive(self) -> tuple[Message | None, bytes]:
        """The next frame, or (None, b"") once the host has closed the channel."""
        header = self._read_exactly(HEADER.size)
        if header is None:
            return None, b""
        json_len, payload_len = HEADER.unpack(header)
        if not check_sizes(json_len, payload_len):
            raise ValueError("frame too large")
        body = self._read_exactly(json_len)
        payload = self._read_exactly(payload_len) if payload_len else b""
        if body is None or payload is None:
            return None, b""
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError("a frame's message is not a JSON object")
        return message, payload
