"""The supervisor protocol's messages as the host builds and reads them (docs/protocol.md).

Requests are models whose ``OP`` names them; ``SupervisorClient`` adds ``op`` and ``id``.
Every frame from the box is validated into one of the reply models by ``parse_reply``
before anyone reads it: a box's frames are untrusted, and one that does not fit ends the
connection. The op names themselves come from ``box/framing.py``, shared with the box.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from golem.core.errors import ProtocolError
from golem.core.events import NetworkEvent
from golem.sandbox.supervisor.box import framing as op

__all__ = [
    "BoxReply",
    "Bridge",
    "Cancel",
    "Chunk",
    "ChunkReply",
    "Configure",
    "Credit",
    "Done",
    "End",
    "EndReply",
    "Error",
    "Exec",
    "Exit",
    "Forget",
    "Get",
    "Hello",
    "HelloRequest",
    "Meta",
    "NetworkNotice",
    "Out",
    "ProcOutput",
    "ProcOutputReply",
    "Procs",
    "ProcsReply",
    "Put",
    "Reply",
    "Request",
    "Reset",
    "Resize",
    "Signal",
    "Started",
    "Stdin",
    "StdinClose",
    "Tool",
    "Wait",
    "Waited",
    "expect",
    "parse_reply",
]


class Request(BaseModel):
    """A message from the host; ``OP`` is its ``op``."""

    model_config = ConfigDict(frozen=True)
    OP: ClassVar[str]
    OMIT_NONE: ClassVar[bool] = False
    """Leave unset optional fields out of the frame (the box reads them as absent)."""

    def to_json(self, call_id: str) -> dict[str, Any]:
        """The frame's JSON object."""
        return {"op": self.OP, "id": call_id, **self.model_dump(exclude_none=self.OMIT_NONE)}


class HelloRequest(Request):
    OP = op.HELLO


class Configure(Request):
    OP = op.CONFIGURE
    env: dict[str, str]


class Exec(Request):
    OP = op.EXEC
    argv: list[str]
    env: dict[str, str]
    cwd: str
    timeout: float | None
    idle_timeout: float | None
    max_output: int
    stdin: Literal["pipe", "null"]
    background: bool = False
    pty: bool = False
    runtime: str | None = None


class Tool(Request):
    """One request of the box's file tools, run by a forked child of the supervisor."""

    OP = op.TOOL
    request: dict[str, Any]
    cwd: str
    timeout: float | None
    max_output: int
    stdin: Literal["null"] = "null"


class Stdin(Request):
    OP = op.STDIN


class StdinClose(Request):
    OP = op.STDIN_CLOSE


class Resize(Request):
    OP = op.RESIZE
    rows: int
    cols: int


class Signal(Request):
    """A signal to the call ``id`` or, with ``target``, to a background process (then
    ``reply`` names the ``done`` that confirms it)."""

    OP = op.SIGNAL
    OMIT_NONE = True
    signal: int
    target: str | None = None
    reply: str | None = None


class Procs(Request):
    OP = op.PROCS


class ProcOutput(Request):
    OP = op.PROC_OUTPUT
    target: str
    offset: int


class Wait(Request):
    OP = op.WAIT
    target: str
    timeout: float | None


class Forget(Request):
    OP = op.FORGET
    target: str


class Put(Request):
    OP = op.PUT
    OMIT_NONE = True
    path: str
    format: Literal["raw", "tar"]
    mode: int | None = None


class Chunk(Request):
    """A file transfer's bytes (both ways; the payload carries them)."""

    OP = op.CHUNK_OP


class End(Request):
    """A file transfer's end (both ways)."""

    OP = op.END


class Get(Request):
    OP = op.GET
    OMIT_NONE = True
    path: str
    format: Literal["raw", "tar"]
    window: int | None = None
    paths: list[str] | None = None
    skip_git: list[str] | None = None


class Credit(Request):
    OP = op.CREDIT
    count: int


class Cancel(Request):
    OP = op.CANCEL


class Bridge(Request):
    OP = op.BRIDGE
    port: int
    path: str


class Reset(Request):
    OP = op.RESET
    paths: list[str]


# Box to host ---------------------------------------------------------------------------


class BoxReply(BaseModel):
    """A message from the box (fields it adds beyond these are ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    OP: ClassVar[str]


class Hello(BoxReply):
    """What the supervisor reports when the connection opens."""

    OP = op.HELLO
    version: int
    pid: int
    uid: int
    gid: int
    python: str
    runtimes: dict[str, str]


class Done(BoxReply):
    OP = op.DONE


class Started(BoxReply):
    OP = op.STARTED
    pid: int


class Out(BoxReply):
    OP = op.OUT
    stream: Literal["stdout", "stderr"]


class Exit(BoxReply):
    """How a call ended; ``exit_code`` is 128+N for signal N."""

    OP = op.EXIT
    exit_code: int
    signal: int | None = None
    timed_out: bool = False
    idle_timed_out: bool = False
    truncated: bool = False
    duration: float = 0.0
    cpu_user: float = 0.0
    cpu_system: float = 0.0
    max_rss_kb: int = 0


class Error(BoxReply):
    """A request failed; ``kind`` is the exception's class name in the box, ``errno`` an
    OSError's number."""

    OP = op.ERROR
    kind: str = "error"
    message: str = "unknown error"
    path: str = ""
    errno: int | None = None


class ProcsReply(BoxReply):
    OP = op.PROCS
    procs: list[dict[str, Any]]


class ProcOutputReply(BoxReply):
    """A background process's kept output: the payload holds bytes ``start`` to
    ``offset`` (absolute; ``start`` is past the offset asked for when bytes not read yet
    were dropped to keep the latest within the cap)."""

    OP = op.PROC_OUTPUT
    start: int
    offset: int
    running: bool
    exit: Exit | None = None
    truncated: bool = False


class Waited(BoxReply):
    OP = op.WAITED
    exit: Exit | None = None


class Meta(BoxReply):
    """A download's start; ``size`` for a raw file."""

    OP = op.META
    size: int | None = None


class ChunkReply(BoxReply):
    OP = op.CHUNK_OP


class EndReply(BoxReply):
    OP = op.END


class NetworkNotice(BaseModel):
    """A decision of the egress proxy, routed into a call's queue on the host (no frame
    from the box can be one: it never passes ``parse_reply``)."""

    model_config = ConfigDict(frozen=True)
    event: NetworkEvent


Reply = BoxReply | NetworkNotice
"""Anything a call's queue holds."""

REPLIES: dict[str, type[BoxReply]] = {
    model.OP: model
    for model in (
        Hello,
        Done,
        Started,
        Out,
        Exit,
        Error,
        ProcsReply,
        ProcOutputReply,
        Waited,
        Meta,
        ChunkReply,
        EndReply,
    )
}


def parse_reply(message: dict[str, Any]) -> BoxReply:
    """A frame's JSON object from the box as its model; ProtocolError when it fits none."""
    model = REPLIES.get(str(message.get("op")))
    if model is None:
        raise ProtocolError(f"the box sent an unknown op {message.get('op')!r}")
    try:
        return model.model_validate(message)
    except ValidationError as exc:
        raise ProtocolError(f"the box sent a malformed {model.OP} frame: {exc}") from None


R = TypeVar("R")


def expect(reply: object, kind: type[R]) -> R:
    """``reply`` as the reply a request expects; another is a broken protocol."""
    if not isinstance(reply, kind):
        raise ProtocolError(f"the box answered with {type(reply).__name__}, not {kind.__name__}")
    return reply
