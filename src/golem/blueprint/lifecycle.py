"""A run's lifecycle: every change of its status, each a named transition checked against
the moves a run may make (``MOVES``), and the one test of whether a run's runner is gone.

A run is ``queued`` until a runner takes it (``mark_running``); it runs, waits at a gate
(``mark_waiting``) or pauses while its model provider is down (``mark_paused``), goes on
(``mark_running`` again), and ends ``succeeded`` (``mark_finished``), ``failed`` or
``cancelled``. Shipping may give it its verdict before its last node (``mark_concluded``:
``unverified`` or ``escalated``); the nodes after it (waiting for CI, handing off) still
run. A run whose machine or runner went away is queued again (``mark_queued``); one that
failed for its forge credentials goes on once they are fixed (``mark_running`` from
``failed``, while it is ``resumable``).

A move the table does not hold is StatusMoveRefused, naming the run and both statuses.
The transitions change the state; who holds it saves it as it always did (a runner
through its ordered writes, the queue and run control through the book), except the few
made of a whole step here (``requeue_run``, ``fail_unstarted``). The store's own
conditional writes (a claim, a requeue, a paused run's resumption) make the same moves.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

from golem.blueprint.book import RunBook
from golem.blueprint.events import RunFinished
from golem.blueprint.state import Pause, RunState, RunStatus
from golem.blueprint.writer import StoreWriter
from golem.core.errors import StatusMoveRefused
from golem.sandbox import process_alive

__all__ = [
    "MOVES",
    "fail_unstarted",
    "mark_cancelled",
    "mark_concluded",
    "mark_failed",
    "mark_finished",
    "mark_paused",
    "mark_queued",
    "mark_running",
    "mark_waiting",
    "move_status",
    "orphaned",
    "requeue_run",
]

_GOING_ON = frozenset[RunStatus]({"waiting", "failed", "cancelled"})
"""What a run shipped with its verdict may still do: its later nodes wait (a gate), fail
or are cancelled."""

MOVES: Mapping[RunStatus, frozenset[RunStatus]] = {
    "queued": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset(
        {
            "running",
            "waiting",
            "queued",
            "succeeded",
            "unverified",
            "escalated",
            "failed",
            "cancelled",
        }
    ),
    "waiting": frozenset({"running", "waiting", "queued", "failed", "cancelled"}),
    "unverified": _GOING_ON | {"escalated"},
    "escalated": _GOING_ON,
    "failed": frozenset({"running"}),
    "succeeded": frozenset(),
    "cancelled": frozenset(),
}
"""The statuses a run may move to, by the status it has. ``running -> running`` is a
runner taking a run a server claimed (the claim set it); ``failed -> running`` a run
failed for its credentials, resumed."""


def move_status(state: RunState, to: RunStatus) -> None:
    """Move the run to ``to``, if the table allows it; else StatusMoveRefused."""
    if to not in MOVES[state.status]:
        raise StatusMoveRefused(
            f"run {state.id} cannot move from {state.status} to {to}; this is a bug in "
            "golem: report it with the run's id and its events (`golem runs show`)"
        )
    state.status = to


def mark_running(state: RunState) -> None:
    """A runner takes the run (new, claimed, resumed, or on from its gate)."""
    if state.status == "failed" and not state.resumable:
        raise StatusMoveRefused(
            f"run {state.id} failed and cannot go on; start a new run for its task"
        )
    move_status(state, "running")
    if state.resumable:  # its credentials were fixed, the person says: the error is past
        state.error, state.resumable = None, False


def mark_waiting(state: RunState) -> None:
    """The run waits at a gate for a person."""
    move_status(state, "waiting")


def mark_paused(state: RunState, paused: Pause) -> None:
    """The run pauses until ``paused.resume_at``: its model provider stays down."""
    move_status(state, "waiting")
    state.pause = paused


def mark_concluded(state: RunState, verdict: RunStatus) -> None:
    """Shipping gave the run its verdict (``unverified`` or ``escalated``)."""
    move_status(state, verdict)


def mark_finished(state: RunState) -> None:
    """The run's last node is done: a run still ``running`` succeeded (one that shipped
    with a verdict keeps it)."""
    if state.status == "running":
        move_status(state, "succeeded")


def mark_failed(state: RunState, error: str) -> None:
    """The run ends failed, saying why."""
    move_status(state, "failed")
    state.error = error


def mark_cancelled(state: RunState, why: str) -> None:
    """The run ends cancelled, saying why; it runs no further node."""
    move_status(state, "cancelled")
    state.error = why


def mark_queued(state: RunState) -> None:
    """The run is nobody's again and waits in the queue (its runner or machine is gone)."""
    move_status(state, "queued")
    state.owner_pid = state.owner_start = state.owner_server = None


def orphaned(state: RunState) -> bool:
    """Whether the run's runner was on this host and is gone (or it has none): the one
    test of an orphan, for recovering a server's runs, resuming and cancelling one."""
    host = (state.owner_server or "").partition(":")[0]
    if host not in ("", socket.gethostname()):
        return False  # another host's server runs it: that server answers for it
    return state.owner_pid is None or not process_alive(state.owner_pid, state.owner_start)


async def requeue_run(book: RunBook, state: RunState) -> bool:
    """Queue the run again, as it was last saved, unless it was claimed or queued again
    meanwhile; whether it was."""
    if state.status == "queued":  # queued again already (another server's recovery)
        return False
    mark_queued(state)
    return await book.store.queue.requeue(state.id, state.model_dump_json())


async def fail_unstarted(book: RunBook, state: RunState, reason: str) -> None:
    """End a run no runner could start (or end): failed with ``reason``, and its run_end;
    both kept even while the store is away for a while."""
    mark_failed(state, reason)
    writes = StoreWriter()
    writes.put(lambda: book.save(state))
    writes.put(lambda: book.append(RunFinished(run_id=state.id, status="failed", summary=reason)))
    await writes.flush()
