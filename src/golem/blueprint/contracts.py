"""The blueprint layer's contract with whatever keeps runs: the store.

The runner takes a RunStore in its constructor: golem's SQL store (SQLite or PostgreSQL,
golem.service), or the in-memory one for tests and demos. ``cancel_requested`` and gate
decisions are written by other processes (``golem runs cancel``, the API) and must survive
the runner's own saves.
"""

from __future__ import annotations

from typing import Literal, Protocol

from golem.blueprint.events import RunEvent
from golem.blueprint.state import RunState

__all__ = ["RunStore"]


class RunStore(Protocol):
    """Where runs and their events are kept."""

    def create_run(self, state: RunState) -> None:
        """Keep a new run."""
        ...

    def save_run(self, state: RunState) -> None:
        """Replace a run's state (its cancel request and gate decision are kept)."""
        ...

    def load_run(self, run_id: str) -> RunState | None:
        """A run with its latest cancel request and gate decision, or None."""
        ...

    def list_runs(self, limit: int = 50) -> list[RunState]:
        """Runs, newest first."""
        ...

    def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        ...

    def decide_gate(self, run_id: str, decision: Literal["approved", "rejected"]) -> bool:
        """Answer the gate a run waits at; False if it was answered already."""
        ...

    def append_event(self, run_id: str, event: RunEvent) -> int:
        """Keep an event; returns its sequence number in the run (from 1)."""
        ...

    def events(self, run_id: str, after: int = 0) -> list[tuple[int, RunEvent]]:
        """The run's events after sequence number ``after``."""
        ...
