"""A store's runs as the blueprint layer's types: the store keeps a run's state and its
events as JSON with a few columns beside them (``golem.store``); this maps RunState and
RunEvent in and out, and is what runners, the server and the CLI read and write runs by."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import cast

from pydantic import TypeAdapter

from golem.blueprint.events import RunEvent
from golem.blueprint.state import RunState, RunStatus
from golem.store import (
    DeliveryRecord,
    PendingRecord,
    RunCap,
    RunRecord,
    Signal,
    Store,
    ThreadRecord,
    control_key,
)

__all__ = ["RunBook", "parse_run_event", "run_state"]

EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)


def parse_run_event(data: str | bytes) -> RunEvent:
    """A run event from its JSON (a stored record's, a server's stream's)."""
    return EVENT.validate_json(data)


def run_state(record: RunRecord) -> RunState:
    """A run's state from its record: the columns other processes write (status, cancel
    request, gate answer, owner, claim) win over the document."""
    state = RunState.model_validate_json(record.document)
    state.status = cast(RunStatus, record.status)
    state.updated = record.updated
    state.cancel_requested = record.cancel_requested
    state.owner_server = record.owner
    state.claim = record.claim
    if state.gate is not None and state.gate.decision is None and record.gate_decision:
        state.gate = state.gate.model_copy(
            update={"decision": record.gate_decision, "decided_by": "person"}
        )
    return state


class RunBook:
    """The runs of one store (its tenant's), as RunState and RunEvent."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def for_tenant(self, tenant: str) -> RunBook:
        """The runs of ``tenant`` (a book for all tenants changes runs through this)."""
        return RunBook(self.store.for_tenant(tenant))

    async def create(
        self,
        state: RunState,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> None:
        """Keep a new run (if ``cap`` leaves it room: else QueueFull; if ``delivery`` started
        no run yet: else DuplicateDelivery), with the ``thread`` it was asked in, claiming
        the ``pending`` request it answers (started already: PendingTaken)."""
        await self.store.runs.create(
            RunRecord(
                id=state.id,
                tenant=self.store.tenant or "",
                status=state.status,
                created=state.created,
                updated=state.updated,
                document=state.model_dump_json(),
            ),
            cap=cap,
            delivery=delivery,
            thread=thread,
            pending=pending,
        )

    async def save(self, state: RunState, *, touch: bool = True) -> None:
        """Replace a run's state (its cancel request and gate answer are kept), if it was
        not claimed again since ``state`` was read (else RunTaken); ``touch`` stamps it as
        changed now (a finished run's time is when it ended). A paused run is kept with its
        resume time, for the queue to resume it then."""
        if touch:
            state.updated = time.time()
        if state.status == "waiting" and state.pause is not None:  # nobody's until it resumes
            await self.store.queue.pause(
                state.id,
                resume_at=state.pause.resume_at,
                updated=state.updated,
                document=state.model_dump_json(),
                claim=state.claim,
            )
            return
        await self.store.runs.save(
            state.id,
            status=state.status,
            updated=state.updated,
            document=state.model_dump_json(),
            claim=state.claim,
        )

    async def load(self, run_id: str) -> RunState | None:
        """A run with its latest cancel request and gate answer, or None."""
        record = await self.store.runs.load(run_id)
        return run_state(record) if record is not None else None

    async def newest(self, limit: int = 50) -> list[RunState]:
        """Runs, newest first."""
        return [run_state(record) for record in await self.store.runs.newest(limit)]

    async def append(self, event: RunEvent, *, claim: int | None = None) -> int:
        """Keep an event of its run; returns its number in the run (from 1). A runner
        gives its ``claim``: its events are refused once the run was claimed again."""
        return await self.store.runs.append_event(
            event.run_id,
            time=event.time,
            kind=event.type,
            data=event.model_dump_json(),
            claim=claim,
        )

    async def events(self, run_id: str, after: int = 0) -> list[tuple[int, RunEvent]]:
        """The run's events after number ``after``, in order."""
        return [
            (record.seq, parse_run_event(record.data))
            for record in await self.store.runs.events(run_id, after)
        ]

    def watch(self, run_id: str) -> AbstractContextManager[Signal]:
        """A signal set when the run's state or events change."""
        return self.store.watch(run_id)

    def watch_control(self, run_id: str) -> AbstractContextManager[Signal]:
        """A signal set when the run is asked to stop or its gate is answered."""
        return self.store.watch(control_key(run_id))
