"""A run's state told for an assertion's message."""

from __future__ import annotations

from golem.blueprint import RunState


def explain(state: RunState) -> str:
    """What went wrong, for an assertion's message."""
    checks = [
        (c.name, c.command, c.passed, c.reason, c.output_tail[-600:])
        for c in [*state.prepared, *state.checks]
    ]
    return f"{state.status}: {state.error}; unverified: {state.unverified}; checks: {checks}"
