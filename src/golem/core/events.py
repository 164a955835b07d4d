"""Typed events: one base every event of golem derives from, one sink type, and the events
of a call in a box.

Each layer has its own discriminated union on this base: ``ExecEvent`` here (a call in a
box), ``golem.agent.AgentEvent`` (an agent run) and ``golem.blueprint.RunEvent`` (a run,
which carries its agent steps' events wrapped). Whoever receives events takes an
``EventSink`` of the union it expects.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ErrorEvent",
    "Event",
    "EventSink",
    "ExecEvent",
    "ExitEvent",
    "NetworkEvent",
    "OutputEvent",
    "Phase",
    "ResourceUsage",
]

Phase = Literal["setup", "code"]
"""``setup`` for a session's setup script, ``code`` for the calls made in the box."""


class Event(BaseModel):
    """What every event has: it cannot change, holds only its declared fields, and says
    when it happened."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    time: float = Field(default_factory=time.time, description="Unix time of the event.")


EventT = TypeVar("EventT", bound=Event)

EventSink = Callable[[EventT], None]
"""Receives events as they happen: ``EventSink[ExecEvent]``, ``EventSink[AgentEvent]``,
``EventSink[RunEvent]``."""


class _BoxCallEvent(Event):
    """The field every event of a call in a box adds."""

    phase: Phase = "code"


class ResourceUsage(BaseModel):
    """What a call consumed, measured by the box."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_user_seconds: float = 0.0
    cpu_system_seconds: float = 0.0
    peak_memory_bytes: int = 0


class OutputEvent(_BoxCallEvent):
    """A chunk of a call's standard output or standard error, the box's bytes as they came
    (secrets already masked); base64 in JSON. A chunk may end inside a UTF-8 character:
    decode a stream's joined bytes, or use an incremental decoder, where text is meant."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    type: Literal["stdout", "stderr"]
    data: bytes

    @property
    def text(self) -> str:
        """This chunk alone as text (bytes that are not UTF-8 become U+FFFD)."""
        return self.data.decode(errors="replace")


class ExitEvent(_BoxCallEvent):
    """The call ended; always the last event of a call that started."""

    type: Literal["exit"] = "exit"
    exit_code: int
    signal: int | None = None
    duration: float
    timed_out: bool = False
    idle_timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False
    usage: ResourceUsage = ResourceUsage()


class ErrorEvent(_BoxCallEvent):
    """Something went wrong around the call (it could not start, the box failed, ...)."""

    type: Literal["error"] = "error"
    message: str
    kind: str = "error"


class NetworkEvent(_BoxCallEvent):
    """A decision of the egress proxy of a ``filtered`` box, sent when it is made. The
    session's log (and an ExecResult) holds the same entries with the bytes moved each way
    counted up to when it is read."""

    type: Literal["net"] = "net"
    index: int = Field(0, description="Position in the session's network log.")
    host: str
    port: int
    allowed: bool
    rule: str = Field(description="What decided: 'allow <regex>', 'deny <regex>', ...")
    address: str | None = Field(None, description="The checked address it connected to.")
    method: str | None = Field(None, description="CONNECT, or the plain HTTP method.")
    brokered: str | None = Field(None, description="Credential the proxy added, by name.")
    bytes_up: int = 0
    bytes_down: int = 0


ExecEvent = Annotated[
    OutputEvent | ExitEvent | ErrorEvent | NetworkEvent, Field(discriminator="type")
]
"""Any event of a call in a box."""
