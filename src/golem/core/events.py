"""Typed events: one discriminated union that flows from the box up to every consumer."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ErrorEvent",
    "ExecEvent",
    "ExitEvent",
    "NetworkEvent",
    "OutputEvent",
    "Phase",
    "ResourceUsage",
]

Phase = Literal["setup", "code"]
"""``setup`` for a session's setup script, ``code`` for the calls made in the box."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    time: float = Field(default_factory=time.time, description="Unix time of the event.")
    phase: Phase = "code"


class ResourceUsage(BaseModel):
    """What a call consumed, measured by the box."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_user_seconds: float = 0.0
    cpu_system_seconds: float = 0.0
    peak_memory_bytes: int = 0


class OutputEvent(_Event):
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


class ExitEvent(_Event):
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


class ErrorEvent(_Event):
    """Something went wrong around the call (it could not start, the box failed, ...)."""

    type: Literal["error"] = "error"
    message: str
    kind: str = "error"


class NetworkEvent(_Event):
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
