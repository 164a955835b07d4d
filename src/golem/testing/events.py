"""An event sink that keeps what it is given, for tests of code that reports through
``EventSink`` (the engine's exec events, the agent's, a run's)::

    events = EventCapture[AgentEvent]()
    await agent.run(task, sink=events)
    [finished] = events.of_type(AgentFinished)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from golem.core.events import Event

__all__ = ["EventCapture"]

E = TypeVar("E", bound=Event)
K = TypeVar("K", bound=Event)


class EventCapture(Generic[E]):
    """Every event it was called with, in order (``events``); an ``EventSink[E]``. It has no
    length, so that code asking ``if on_event:`` always finds a sink, empty or not."""

    def __init__(self) -> None:
        self.events: list[E] = []

    def __call__(self, event: E) -> None:
        self.events.append(event)

    def of_type(self, kind: type[K]) -> list[K]:
        """The events that are a ``kind``, in order."""
        return [event for event in self.events if isinstance(event, kind)]

    def types(self) -> list[str]:
        """Each event's ``type`` field, in order: what happened, at a glance."""
        return [str(getattr(event, "type", type(event).__name__)) for event in self.events]

    def __iter__(self) -> Iterator[E]:
        return iter(self.events)

    def clear(self) -> None:
        """Forget what was captured (a test's second phase)."""
        self.events.clear()
