"""Gates: the run waits for a person to approve or reject, up to a timeout."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from golem.blueprint.events import GateDecided, GateWaiting
from golem.blueprint.execution import Execution
from golem.blueprint.model import GateNode
from golem.blueprint.state import GateState

__all__ = ["run_gate"]


async def run_gate(ex: Execution, node: GateNode, poll: float) -> Literal["approved", "rejected"]:
    """Ask, wait for a decision in the store (or the deadline), and answer with it."""
    state = ex.state
    if state.gate is None or state.gate.node != node.id:  # a resumed run keeps its deadline
        now = time.time()
        deadline = now + node.timeout if node.timeout is not None else None
        state.gate = GateState(node=node.id, message=node.message, asked=now, deadline=deadline)
        state.status = "waiting"
        ex.save()
        ex.emit(GateWaiting(run_id=state.id, node=node.id, message=node.message, deadline=deadline))
    gate = state.gate
    while True:
        current = ex.store.load_run(state.id)
        decided = current.gate if current is not None else None
        if decided is not None and decided.decision is not None:
            decision: Literal["approved", "rejected"] = decided.decision
            by = "person"
            break
        if gate.deadline is not None and time.time() >= gate.deadline:
            decision, by = node.default, "timeout"
            break
        await asyncio.sleep(poll)
    state.gate = None
    state.status = "running"
    clear = getattr(ex.store, "clear_gate", None)
    if clear is not None:
        clear(state.id)
    ex.save()
    ex.emit(GateDecided(run_id=state.id, node=node.id, decision=decision, decided_by=by))
    return decision
