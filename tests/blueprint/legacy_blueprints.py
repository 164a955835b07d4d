"""Blueprints as they were written before today's actions."""

from __future__ import annotations

from golem.blueprint.steps.dispatch import LEGACY_FOLLOW_UP


def written_before(source: str) -> str:
    """A follow-up blueprint as it was written before the follow-up actions."""
    for old, new in LEGACY_FOLLOW_UP.items():
        source = source.replace(f"action: {new}\n", f"action: {old}\n")
    return source
