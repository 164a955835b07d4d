"""Pausing a run whose model provider stays down: where it stopped, why, when it resumes,
and how long its node was paused (which no wall-clock budget counts)."""

from __future__ import annotations

import time

from golem.blueprint.state import NodeRecord, Pause, PausedStep, RunState
from golem.core.ansi import plain
from golem.core.errors import ProviderDown
from golem.core.model_config import ModelsConfig

__all__ = ["MAX_REASON", "pause_of", "resume_time", "unpaused"]

MAX_REASON = 1000
"""Characters of a pause's reason kept (the provider's own words are among them)."""


def pause_of(
    state: RunState,
    node: str,
    down: ProviderDown,
    resumed_at: float,
    models: ModelsConfig,
    step: PausedStep | None,
    spent: float,
) -> Pause:
    """The pause of ``state`` at ``node`` (which began, or resumed, at ``resumed_at``,
    when the run had spent ``spent`` dollars): a pause of the same node in a row counts
    one more and waits twice as long."""
    now = time.time()
    earlier = state.pause if state.pause is not None and state.pause.node == node else None
    count = earlier.count + 1 if earlier is not None else 1
    return Pause(
        node=node,
        reason=plain(down.reason)[:MAX_REASON],
        since=now,
        resume_at=resume_time(models, count, down.back_at, now),
        count=count,
        node_started=earlier.node_started if earlier is not None else resumed_at,
        paused_before=(
            earlier.paused_before + (resumed_at - earlier.since) if earlier is not None else 0.0
        ),
        cost_usd=(earlier.cost_usd if earlier is not None else 0.0) + state.cost_usd - spent,
        step=step,
    )


def resume_time(models: ModelsConfig, count: int, back_at: float | None, now: float) -> float:
    """When a run paused ``count`` times in a row resumes: when the provider said it is
    back, but not before ``resume_after`` doubled for each pause before, and never later
    than ``resume_max`` from now."""
    wait = min(models.resume_after * 2.0 ** (count - 1), models.resume_max)
    return min(max(now + wait, back_at or 0.0), now + models.resume_max)


def unpaused(state: RunState, record: NodeRecord, resumed_at: float) -> NodeRecord:
    """The record of a node that ended, its pauses in it (if it resumed at
    ``resumed_at``): it started when it first did, was paused so long in between, and
    cost what it spent before too. The run's pause is over."""
    pause, state.pause = state.pause, None
    if pause is not None and pause.node == record.node:
        record.started = pause.node_started
        record.paused = pause.paused_before + (resumed_at - pause.since)
        record.cost_usd += pause.cost_usd
    return record
