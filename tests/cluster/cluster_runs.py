"""Gated runs on the Ray cluster: where they run and when they wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.blueprint.runs import GATED as GATED_TEMPLATE

GATED = GATED_TEMPLATE.replace("TIMEOUT", "900")
"""A blueprint whose runs wait at a gate, holding their slot, until a person answers."""


def node_of(run: dict[str, Any]) -> str:
    """The node whose box host ran ``run``: its checkout is under that node's state."""
    parts = Path(run["workspace"]).parts
    return parts[parts.index("cluster") + 1]


def at_gate(event: tuple[str, dict[str, Any]]) -> bool:
    return event[0] == "gate_wait"
