"""Trajectories: an agent run's events as JSONL, written as they happen, read back later;
and the conversation a paused run goes on from, out of its events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from pydantic import TypeAdapter, ValidationError

from golem.agent.events import AgentEvent, AgentStarted, ModelAnswered, ModelCalled, ModelDelta
from golem.agent.messages import Message
from golem.core.errors import ConfigError

__all__ = ["TrajectoryWriter", "conversation_of", "read_trajectory"]

_EVENTS: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


class TrajectoryWriter:
    """Appends each event (text deltas excepted) as one JSON line, flushed at once, so a
    run that dies leaves everything up to its last step."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def __call__(self, event: AgentEvent) -> None:
        """Write one event."""
        if self._file is None or isinstance(event, ModelDelta):
            return
        self._file.write(event.model_dump_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def read_trajectory(path: Path) -> tuple[list[AgentEvent], list[str]]:
    """The events of a trajectory file, and a note for each line that is not one (events
    of other kinds, written by other layers, are skipped with a note too)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read trajectory {path}: {exc.strerror}") from None
    events: list[AgentEvent] = []
    notes: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(_EVENTS.validate_json(line))
        except ValidationError as exc:
            kind = _kind(line)
            notes.append(f"{path}:{number}: skipped {kind or 'a line that is not an event'}")
            if kind is None and not events:
                raise ConfigError(
                    f"{path}:{number}: not a golem trajectory ({exc.errors()[0]['msg']})"
                ) from None
    return events, notes


def conversation_of(events: Iterable[AgentEvent]) -> tuple[list[Message], int]:
    """The conversation of an agent run (its messages, and how many model calls were
    answered), from its events in order: those since the last start that was not a
    resumption, every resumption after it included."""
    messages: list[Message] = []
    turns = 0
    for event in events:
        if isinstance(event, AgentStarted) and not event.resumed:
            messages, turns = [], 0
        elif isinstance(event, ModelCalled):
            messages.extend(event.new_messages)
        elif isinstance(event, ModelAnswered):
            messages.append(event.response.message)
            turns += 1
    return messages, turns


def _kind(line: str) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return f"a {value['type']!r} event" if isinstance(value, dict) and "type" in value else None
