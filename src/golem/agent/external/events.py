"""The events of an external agent run: golem's agent events, ExternalOutput (a line the CLI
printed) among them; kept here under the names this package has always used."""

from __future__ import annotations

from collections.abc import Callable

from golem.agent.events import AgentEvent, ExternalOutput, OutputStream

__all__ = ["ExternalEvent", "ExternalEventSink", "ExternalOutput", "OutputStream"]

ExternalEvent = AgentEvent
"""What an external agent run reports (ExternalOutput is one of golem's agent events)."""

ExternalEventSink = Callable[[ExternalEvent], None]
"""Receives the events of an external agent run as they happen."""
