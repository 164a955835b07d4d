"""Gates: the run waits for a person to approve or reject, up to a timeout."""

from __future__ import annotations

import time
from typing import Literal

from golem.blueprint.events import GateDecided, GateWaiting
from golem.blueprint.execution import Execution
from golem.blueprint.lifecycle import mark_running, mark_waiting
from golem.blueprint.model import GateNode
from golem.blueprint.state import GateState
from golem.core.errors import StoreUnavailable
from golem.store import RECHECK, RETRY_AFTER

__all__ = ["run_gate"]


async def run_gate(ex: Execution, node: GateNode) -> Literal["approved", "rejected"]:
    """Ask, wait for a decision in the store (or the deadline), and answer with it. The
    store wakes the gate when it is answered."""
    state = ex.state
    if state.gate is None or state.gate.node != node.id:  # a resumed run keeps its deadline
        now = time.time()
        deadline = now + node.timeout if node.timeout is not None else None
        state.gate = GateState(node=node.id, message=node.message, asked=now, deadline=deadline)
        mark_waiting(state)
        ex.save()
        ex.emit(GateWaiting(run_id=state.id, node=node.id, message=node.message, deadline=deadline))
    elif state.status != "waiting":  # resumed at its gate: it waits again, and says so
        mark_waiting(state)
        ex.save()
        gate = state.gate
        ex.emit(
            GateWaiting(run_id=state.id, node=node.id, message=gate.message, deadline=gate.deadline)
        )
    await ex.writes.flush()  # the gate is in the store before anyone can answer it
    decision, by = await _answer(ex, node, state.gate)
    state.gate = None
    mark_running(state)
    ex.save()
    await ex.writes.flush()  # closed in the store before its answer is forgotten: no second
    ex.writes.put(lambda: ex.book.store.runs.clear_gate(state.id))  # answer can land in between
    await ex.writes.flush()
    ex.emit(GateDecided(run_id=state.id, node=node.id, decision=decision, decided_by=by))
    return decision


async def _answer(
    ex: Execution, node: GateNode, gate: GateState
) -> tuple[Literal["approved", "rejected"], Literal["person", "timeout"]]:
    """The person's answer, or the node's default once the deadline passed."""
    with ex.book.watch_control(ex.state.id) as answered:
        while True:
            answered.clear()
            try:
                current = await ex.book.load(ex.state.id)
            except StoreUnavailable:  # an outage does not end the wait; look again soon
                await answered.wait(RETRY_AFTER)
                continue
            decided = current.gate if current is not None else None
            if decided is not None and decided.decision is not None:
                return decided.decision, "person"
            left = None if gate.deadline is None else gate.deadline - time.time()
            if left is not None and left <= 0:
                return node.default, "timeout"
            await answered.wait(RECHECK if left is None else min(left, RECHECK))
