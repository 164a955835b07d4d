"""Runs and their events in golem's store.

A run is kept as its document (the blueprint layer's state, as JSON) with the columns other
processes write beside it: a cancel request, a gate's answer, the server that claimed it and
its claim (the fencing token of its runner: a write given a claim is refused with RunTaken
once the run was claimed again). Its events are numbered from 1 in the run, one writer at a
time (the run's row lock). Retention deletes the events of runs that ended long ago, all but
their ``run_end`` (a follower still learns how each ended)."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import delete, exists, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from golem.core.errors import QueueFull, RunNotFound, StoreError
from golem.store.bounds import bounded
from golem.store.deliveries import keep_delivery, remember_delivery
from golem.store.notify import QUEUE, ROOM, control_key
from golem.store.pending import (
    check_pending_in_memory,
    claim_pending,
    claim_pending_in_memory,
)
from golem.store.records import (
    ACTIVE,
    FINISHED,
    Decision,
    DeliveryRecord,
    EventRecord,
    PendingRecord,
    RunCap,
    RunRecord,
    ThreadRecord,
)
from golem.store.repository import MemoryRepository, SqlRepository, held_claim, run_record
from golem.store.schema import run_events, runs
from golem.store.threads import keep_thread

__all__ = ["MemoryRuns", "Runs", "SqlRuns"]


class Runs(Protocol):
    """Runs and their events (``store.runs``)."""

    async def create(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> None:
        """Keep a new run of this store's tenant; with ``cap``, only if the store's runs
        leave it room (else QueueFull); with ``delivery``, only if no run was kept with one
        of its ids (else DuplicateDelivery naming that run), the delivery kept with it;
        with ``thread``, the thread it was asked in (a chat source's); with ``pending``,
        the pending request it answers, claimed (else PendingTaken) and the thread's
        others left waiting for it; all atomically across the processes sharing the
        store."""
        ...

    async def save(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status (cancel request, gate answer, owner kept);
        with ``claim``, only while the run's claim is that one (else RunTaken)."""
        ...

    async def load(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        ...

    async def newest(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        ...

    async def count(self, *statuses: str) -> int:
        """How many runs have one of ``statuses``."""
        ...

    async def active(self) -> list[RunRecord]:
        """Runs in progress, oldest first."""
        ...

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        ...

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False if it was answered already."""
        ...

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        ...

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event; returns its sequence number in the run (from 1). The same
        ``data`` as the run's last event is that event, kept once (a retried write). With
        ``claim``, only while the run's claim is that one (else RunTaken)."""
        ...

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        ...

    async def prunable(self, ended_before: float) -> list[RunRecord]:
        """Runs that ended before ``ended_before`` with events to prune (any but their
        ``run_end``)."""
        ...

    async def prune_events(self, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end``."""
        ...


CAP_LOCK = 0x60_1E_CA  # the advisory lock of the run cap (PostgreSQL)
_PRUNED = run_events.c.type != "run_end"  # a run's run_end is kept


@bounded(
    retried={
        "load",
        "newest",
        "count",
        "active",
        "events",
        "prunable",
        "save",
        "request_cancel",
        "clear_gate",
        "append_event",
        "prune_events",
    },
    once={"create", "decide_gate"},
)
class SqlRuns(SqlRepository):
    """Runs in SQL."""

    async def create(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> None:
        """Keep a new run (``record.tenant`` is ignored). The count, the inserts and the
        delivery's key are one transaction that one process at a time makes (PostgreSQL:
        an advisory lock and the key; SQLite: its write lock), so servers sharing the store
        never overshoot the cap nor start a delivery twice."""
        tenant = self._creating("a run")
        async with self.transaction(write=True, changed=(record.id, QUEUE)) as db:
            if cap is not None:
                await _check_cap(db, cap)
            await db.execute(
                insert(runs).values(
                    id=record.id,
                    tenant=tenant,
                    status=record.status,
                    created=record.created,
                    updated=record.updated,
                    state=record.document,
                )
            )
            if delivery is not None:
                await keep_delivery(db, tenant, delivery, record.id, record.created)
            if thread is not None:
                await keep_thread(db, tenant, thread, record.id, record.created)
            if pending is not None:
                await claim_pending(db, tenant, pending, record.id)

    async def save(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status; its cancel request, gate decision and
        owner are kept. With ``claim``, only while the run's claim is that one."""
        fenced = [runs.c.claim == claim] if claim is not None else []
        changed = (run_id, ROOM) if _frees_room(status) else (run_id,)
        async with self.transaction(write=True, changed=changed) as db:
            saved = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), *fenced)
                .values(status=status, updated=updated, state=document)
            )
            if saved.rowcount == 0:  # RunTaken if it is there under another claim
                await held_claim(db, self._mine(runs), run_id, claim)

    async def load(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        async with self.transaction() as db:
            row = (
                await db.execute(select(runs).where(runs.c.id == run_id, self._mine(runs)))
            ).first()
        return run_record(row) if row is not None else None

    async def newest(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        query = select(runs).where(self._mine(runs)).order_by(runs.c.created.desc())
        async with self.transaction() as db:
            rows = (await db.execute(query.limit(limit))).all()
        return [run_record(row) for row in rows]

    async def count(self, *statuses: str) -> int:
        """How many of this store's runs have one of ``statuses``."""
        async with self.transaction() as db:
            counted = await db.execute(
                select(func.count()).where(runs.c.status.in_(statuses), self._mine(runs))
            )
        return int(counted.scalar_one())

    async def active(self) -> list[RunRecord]:
        """Runs in progress (running, or waiting at a gate), oldest first."""
        query = select(runs).where(runs.c.status.in_(ACTIVE), self._mine(runs))
        async with self.transaction() as db:
            rows = (await db.execute(query.order_by(runs.c.created))).all()
        return [run_record(row) for row in rows]

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        async with self.transaction(write=True, changed=(control_key(run_id),)) as db:
            await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs))
                .values(cancel_requested=True)
            )

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False when it was answered already (the first
        answer stands)."""
        async with self.transaction(write=True, changed=(control_key(run_id),)) as db:
            done = await db.execute(
                update(runs)
                .where(runs.c.id == run_id, self._mine(runs), runs.c.gate_decision.is_(None))
                .values(gate_decision=decision)
            )
        return done.rowcount == 1

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer once the runner has acted on it."""
        async with self.transaction(write=True) as db:
            await db.execute(
                update(runs).where(runs.c.id == run_id, self._mine(runs)).values(gate_decision=None)
            )

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event (``data``: it as JSON); returns its sequence number in the run
        (from 1). With ``claim``, only while the run's claim is that one."""
        async with self.transaction(write=True, changed=(run_id,)) as db:
            # the run's row lock numbers its events one writer at a time
            if await held_claim(db, self._mine(runs), run_id, claim) is None:
                raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
            last = (
                await db.execute(
                    select(func.coalesce(func.max(run_events.c.seq), 0)).where(
                        run_events.c.run_id == run_id
                    )
                )
            ).scalar_one()
            if await _same_as_last(db, run_id, int(last), data):
                return int(last)  # a retried append whose first try was kept
            seq = int(last) + 1
            await db.execute(
                insert(run_events).values(run_id=run_id, seq=seq, time=time, type=kind, data=data)
            )
        return seq

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        visible = select(runs.c.id).where(runs.c.id == run_id, self._mine(runs))
        columns = (run_events.c.seq, run_events.c.time, run_events.c.type, run_events.c.data)
        async with self.transaction() as db:
            rows = (
                await db.execute(
                    select(*columns)
                    .where(run_events.c.run_id.in_(visible), run_events.c.seq > after)
                    .order_by(run_events.c.seq)
                )
            ).all()
        return [EventRecord(seq=r.seq, time=r.time, type=r.type, data=r.data) for r in rows]

    async def prunable(self, ended_before: float) -> list[RunRecord]:
        """This store's runs that ended before ``ended_before`` (a time) with events to
        prune (any but their ``run_end``)."""
        has_events = exists().where(run_events.c.run_id == runs.c.id, _PRUNED)
        old = (
            runs.c.status.in_(FINISHED),
            runs.c.updated < ended_before,
            self._mine(runs),
            has_events,
        )
        async with self.transaction() as db:
            rows = (await db.execute(select(runs).where(*old))).all()
        return [run_record(row) for row in rows]

    async def prune_events(self, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end``."""
        mine = select(runs.c.id).where(runs.c.id == run_id, self._mine(runs))
        async with self.transaction(write=True) as db:
            await db.execute(delete(run_events).where(run_events.c.run_id.in_(mine), _PRUNED))


async def _check_cap(db: AsyncConnection, cap: RunCap) -> None:
    """QueueFull unless the store's runs leave ``cap`` room (within the caller's write
    transaction, under the cap's lock)."""
    if db.dialect.name == "postgresql":
        await db.execute(text(f"SELECT pg_advisory_xact_lock({CAP_LOCK})"))
    taken = (
        await db.execute(select(func.count()).where(runs.c.status.in_(cap.statuses)))
    ).scalar_one()
    if int(taken) >= cap.limit:
        raise QueueFull(cap.reason, retry_after=cap.retry_after)


async def _same_as_last(db: AsyncConnection, run_id: str, last: int, data: str) -> bool:
    """Whether the run's last event is ``data`` (each event holds its own time, so two
    equal events are one event written twice)."""
    if last == 0:
        return False
    kept = await db.execute(
        select(run_events.c.data).where(run_events.c.run_id == run_id, run_events.c.seq == last)
    )
    return kept.scalar_one_or_none() == data


class MemoryRuns(MemoryRepository):
    """Runs in memory."""

    async def create(
        self,
        record: RunRecord,
        *,
        cap: RunCap | None = None,
        delivery: DeliveryRecord | None = None,
        thread: ThreadRecord | None = None,
        pending: PendingRecord | None = None,
    ) -> None:
        """Keep a new run (if ``cap`` leaves it room, and no run was kept with one of
        ``delivery``'s ids: else DuplicateDelivery), the delivery and ``thread`` with it."""
        tenant = self._creating("a run")
        if record.id in self._data.runs:
            raise StoreError(f"run {record.id!r} exists already")
        if cap is not None:
            taken = sum(run.status in cap.statuses for run in self._data.runs.values())
            if taken >= cap.limit:
                raise QueueFull(cap.reason, retry_after=cap.retry_after)
        if pending is not None:
            check_pending_in_memory(self._data, tenant, pending)
        if delivery is not None:
            remember_delivery(self._data, tenant, delivery, record.id, record.created)
        if pending is not None:
            claim_pending_in_memory(self._data, tenant, pending, record.id)
        if thread is not None:
            kept = {"run_id": record.id, "tenant": tenant, "created": record.created}
            self._data.threads[record.id] = thread.model_copy(update=kept)
        self._data.runs[record.id] = record.model_copy(update={"tenant": tenant})
        self._changed(record.id, QUEUE)

    async def save(
        self, run_id: str, *, status: str, updated: float, document: str, claim: int | None = None
    ) -> None:
        """Replace a run's document and status (with ``claim``: only while it holds)."""
        if self._held(run_id, claim):
            self._update(run_id, status=status, updated=updated, document=document)
            if _frees_room(status):
                self._changed(ROOM)

    async def load(self, run_id: str) -> RunRecord | None:
        """A run, or None."""
        return self._run(run_id)

    async def newest(self, limit: int = 50) -> list[RunRecord]:
        """Runs, newest first."""
        return sorted(self._runs(), key=lambda run: run.created, reverse=True)[:limit]

    async def count(self, *statuses: str) -> int:
        """How many of this store's runs have one of ``statuses``."""
        return sum(1 for run in self._runs() if run.status in statuses)

    async def active(self) -> list[RunRecord]:
        """Runs in progress, oldest first."""
        return sorted((r for r in self._runs() if r.status in ACTIVE), key=lambda r: r.created)

    async def request_cancel(self, run_id: str) -> None:
        """Ask the run's runner to stop."""
        self._update(run_id, cancel_requested=True, notify=False)
        self._changed(control_key(run_id))

    async def decide_gate(self, run_id: str, decision: Decision) -> bool:
        """Answer the gate a run waits at; False when it was answered already."""
        run = self._run(run_id)
        if run is None or run.gate_decision is not None:
            return False
        self._update(run_id, gate_decision=decision, notify=False)
        self._changed(control_key(run_id))
        return True

    async def clear_gate(self, run_id: str) -> None:
        """Forget a gate's answer."""
        self._update(run_id, gate_decision=None, notify=False)

    async def append_event(
        self, run_id: str, *, time: float, kind: str, data: str, claim: int | None = None
    ) -> int:
        """Keep an event; returns its sequence number in the run (from 1)."""
        if not self._held(run_id, claim):
            raise RunNotFound(f"no run {run_id!r}; see `golem runs ls`")
        events = self._data.events.setdefault(run_id, [])
        if events and events[-1].data == data:
            return events[-1].seq  # a retried append (each event holds its own time)
        seq = events[-1].seq + 1 if events else 1  # numbers go on after a prune, as in SQL
        events.append(EventRecord(seq=seq, time=time, type=kind, data=data))
        self._changed(run_id)
        return seq

    async def events(self, run_id: str, after: int = 0) -> list[EventRecord]:
        """The run's events after sequence number ``after``, in order."""
        if self._run(run_id) is None:
            return []
        return [event for event in self._data.events.get(run_id, []) if event.seq > after]

    async def prunable(self, ended_before: float) -> list[RunRecord]:
        """Runs that ended before ``ended_before`` with events to prune."""
        return [
            run
            for run in self._runs()
            if run.status in FINISHED
            and run.updated < ended_before
            and any(event.type != "run_end" for event in self._data.events.get(run.id, []))
        ]

    async def prune_events(self, run_id: str) -> None:
        """Delete a run's events, all but its ``run_end``."""
        if self._run(run_id) is None:
            return
        events = self._data.events.get(run_id, [])
        self._data.events[run_id] = [event for event in events if event.type == "run_end"]


def _frees_room(status: str) -> bool:
    """Whether a run saved with ``status`` no longer counts against any run cap."""
    return status != "queued" and status not in ACTIVE
