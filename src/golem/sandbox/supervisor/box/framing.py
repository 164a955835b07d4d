"""The supervisor protocol's framing, shared by the box and the host (docs/protocol.md).

Each frame is an 8-byte header (JSON length, payload length; big-endian u32), a JSON
object, then raw payload bytes. The JSON object's ``op`` names the message.
"""

from __future__ import annotations

import json
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = 1
HEADER = struct.Struct(">II")
MAX_JSON = 8 * 1024 * 1024
"""Most bytes of a frame's JSON either side accepts."""
MAX_PAYLOAD = 64 * 1024 * 1024
"""Most bytes of a frame's payload either side accepts."""
CHUNK = 64 * 1024
"""Bytes the box reads or sends at a time (call output, file chunks)."""

# Requests, host to box.
HELLO = "hello"
CONFIGURE = "configure"
EXEC = "exec"
TOOL = "tool"
STDIN = "stdin"
STDIN_CLOSE = "stdin_close"
RESIZE = "resize"
SIGNAL = "signal"
PROCS = "procs"
PROC_OUTPUT = "proc_output"
WAIT = "wait"
FORGET = "forget"
PUT = "put"
CHUNK_OP = "chunk"  # both ways: a file transfer's bytes
END = "end"  # both ways: a file transfer's end
GET = "get"
CREDIT = "credit"
CANCEL = "cancel"
BRIDGE = "bridge"
RESET = "reset"

# Replies and events, box to host (``hello``, ``procs``, ``proc_output``, ``chunk`` and
# ``end`` answer with their request's name).
DONE = "done"
STARTED = "started"
OUT = "out"
EXIT = "exit"
ERROR = "error"
WAITED = "waited"
META = "meta"


def encode(message: dict[str, Any], payload: bytes = b"") -> bytes:
    """One whole frame."""
    body = json.dumps(message, separators=(",", ":")).encode()
    return HEADER.pack(len(body), len(payload)) + body + payload


def check_sizes(json_len: int, payload_len: int) -> bool:
    """Whether a frame of these sizes may be read (a larger one ends the connection)."""
    return json_len <= MAX_JSON and payload_len <= MAX_PAYLOAD
