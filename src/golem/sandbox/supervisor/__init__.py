"""The in-box supervisor (shipped as source) and its host-side client."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from golem.sandbox.supervisor.client import Frame, Hello, SessionClient, SupervisorClient

__all__ = [
    "PROTOCOL_VERSION",
    "Frame",
    "Hello",
    "SessionClient",
    "SupervisorClient",
    "supervisor_source",
]

PROTOCOL_VERSION = 1


@cache
def supervisor_source() -> str:
    """The supervisor's source code, as the box's first process runs it."""
    return (files(__package__) / "golem_supervisor.py").read_text(encoding="utf-8")
