"""The one event an external CLI adds to golem's agent events: a line it printed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.events import AgentEvent

__all__ = ["ExternalEvent", "ExternalEventSink", "ExternalOutput", "OutputStream"]

OutputStream = Literal["stdout", "stderr", "golem"]
"""Where a line came from: the CLI's standard output or error, or golem itself (the
command it ran, egress refusals, why it stopped the CLI)."""


class ExternalOutput(BaseModel):
    """One line an external CLI printed, as it arrived (secrets masked by the box)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    time: float = Field(default_factory=time.time)
    type: Literal["external_output"] = "external_output"
    stream: OutputStream
    line: str


ExternalEvent = AgentEvent | ExternalOutput
"""What an external agent run reports: golem's agent events, mapped from the CLI's
structured output where it has one, and every raw line."""

ExternalEventSink = Callable[[ExternalEvent], None]
"""Receives the events of an external agent run as they happen."""
