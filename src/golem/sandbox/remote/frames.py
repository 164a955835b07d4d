"""The call channel's wire (``/v1/sessions/{id}/calls``): every frame either end sends, as
pydantic models that both the server and ``RemoteEngine`` use, read with
``model_validate_json`` on receipt and written with ``model_dump_json`` on send.

The client sends a ``CallFrame``: ``{"id": N, "op": "execute" | "stream", "request":
ExecRequest}``, or ``{"id": N, "op": "cancel"}`` to stop a call it no longer wants. The
server answers each call with frames of its id (an ``AnswerFrame``, told apart by the one
field each has): ``{"id": N, "result": ExecResult}`` for ``execute``; ``{"id": N, "event":
ExecEvent}`` per event, then ``{"id": N, "end": true}`` for ``stream``; or ``{"id": N,
"error": {"status", "kind", "detail"}}`` (a problem, as HTTP answers it).

A frame that is none of these is refused with ``MalformedFrame``, which names what is wrong
with it (on the server, the socket closes with 4400; on the client, the socket's calls end
with that error).

An interactive call's socket (``/v1/sessions/{id}/exec/ws``) has its client messages here
too: ``OpenCall`` first, then ``CallMessage``s (stdin in base64, its end, a signal, a
pty's ``Resize``); the server answers with the call's ``ExecEvent``s."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictInt,
    Tag,
    TypeAdapter,
    ValidationError,
    field_serializer,
    field_validator,
)

from golem.core.errors import MalformedFrame
from golem.core.events import ExecEvent
from golem.sandbox.models import ExecRequest, ExecResult

__all__ = [
    "MOST_CALLS_HEADER",
    "AnswerFrame",
    "CallFrame",
    "CallMessage",
    "EndFrame",
    "ErrorFrame",
    "EventFrame",
    "OpenCall",
    "ProblemFrame",
    "Resize",
    "ResultFrame",
    "read_answer",
]

MOST_CALLS_HEADER = "Golem-Max-Calls"
"""The handshake's header: how many calls the server runs on one socket at once."""

CallId = Annotated[StrictInt, Field(ge=0, le=2**53)]


class CallFrame(BaseModel):
    """A client's frame: start a call (``execute``, ``stream``) or cancel one. A call
    without its request is read, and answered with an error frame of its id."""

    model_config = ConfigDict(extra="forbid")

    id: CallId
    op: Literal["execute", "stream", "cancel"]
    request: ExecRequest | None = None


class ProblemFrame(BaseModel):
    """Why a call failed: its status, golem's error class, what to do."""

    status: int
    kind: str | None = None
    detail: str


class ResultFrame(BaseModel):
    """An ``execute`` call's result: the call's last frame."""

    id: CallId
    result: ExecResult


class EventFrame(BaseModel):
    """One event of a ``stream`` call."""

    id: CallId
    event: ExecEvent


class EndFrame(BaseModel):
    """A ``stream`` call's last frame: no event follows."""

    id: CallId
    end: Literal[True] = True


class ErrorFrame(BaseModel):
    """A call that failed, or that the channel could not take: its last frame."""

    id: CallId
    error: ProblemFrame


class OpenCall(BaseModel):
    """The first message: what to run, and on a pty or pipes."""

    model_config = ConfigDict(extra="forbid")

    request: ExecRequest
    pty: StrictBool = False
    rows: StrictInt = Field(24, ge=1, le=1000)
    cols: StrictInt = Field(80, ge=1, le=1000)


class Resize(BaseModel):
    """A pty's new window size."""

    model_config = ConfigDict(extra="forbid")

    rows: StrictInt = Field(ge=1, le=1000)
    cols: StrictInt = Field(ge=1, le=1000)


class CallMessage(BaseModel):
    """A message while the call runs: stdin (base64), its end, a signal, a resize."""

    model_config = ConfigDict(extra="forbid")

    stdin: bytes | None = None
    stdin_close: StrictBool = False
    signal: StrictInt | None = Field(None, ge=1, le=64)
    resize: Resize | None = None

    @field_validator("stdin", mode="before")
    @classmethod
    def _base64(cls, value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):  # None, or made here (not read)
            return value
        if not isinstance(value, str):
            raise ValueError("stdin must be a base64 string")  # noqa: TRY004 - pydantic's
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("stdin is not base64 (A-Z, a-z, 0-9, +, / and = padding)") from None

    @field_serializer("stdin", when_used="unless-none")
    def _as_base64(self, value: bytes) -> str:
        return base64.b64encode(value).decode()


ANSWER_FIELDS = ("result", "event", "end", "error")


def _answer_kind(frame: Any) -> str | None:
    """The field that says what an answer is (a server's frame holds exactly one)."""
    if isinstance(frame, dict):
        present = [name for name in ANSWER_FIELDS if name in frame]
        return present[0] if len(present) == 1 else None
    return next((name for name in ANSWER_FIELDS if hasattr(frame, name)), None)


AnswerFrame = Annotated[
    Annotated[ResultFrame, Tag("result")]
    | Annotated[EventFrame, Tag("event")]
    | Annotated[EndFrame, Tag("end")]
    | Annotated[ErrorFrame, Tag("error")],
    Discriminator(
        _answer_kind,
        custom_error_type="no_answer_kind",
        custom_error_message="a frame holds exactly one of result, event, end, error",
    ),
]
"""A server's frame for one call."""

_ANSWER: TypeAdapter[AnswerFrame] = TypeAdapter(AnswerFrame)
SHOWN = 200
"""Characters of a malformed frame its error quotes."""


def read_answer(data: str | bytes) -> AnswerFrame:
    """A server's frame, validated; MalformedFrame (naming what is wrong) when it is not
    one."""
    try:
        return _ANSWER.validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'frame'}: {error['msg']}"
            for error in exc.errors()[:3]
        )
        shown = data if isinstance(data, str) else data.decode(errors="replace")
        if len(shown) > SHOWN:
            shown = shown[:SHOWN] + "..."
        raise MalformedFrame(
            f"the golem server sent a frame that is not one of the call channel's "
            f"({problems}): {shown!r}; run a client and a server of the same golem version"
        ) from None
