"""The in-box supervisor (``box/``, shipped as source) and its host-side client."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from golem.sandbox.supervisor.box.framing import PROTOCOL_VERSION
from golem.sandbox.supervisor.client import Frame, SessionClient, SupervisorClient
from golem.sandbox.supervisor.messages import Hello

__all__ = [
    "PROTOCOL_VERSION",
    "Frame",
    "Hello",
    "SessionClient",
    "SupervisorClient",
    "supervisor_source",
]


@cache
def supervisor_source() -> str:
    """The supervisor's source as the box's first process runs it (``python3 -c``): the
    bootstrap, then every module of ``box/`` as source text, then the call of ``main``."""
    box = files(__package__) / "box"
    sources = {
        entry.name.removesuffix(".py"): entry.read_text(encoding="utf-8")
        for entry in sorted(box.iterdir(), key=lambda entry: entry.name)
        if entry.name.endswith(".py") and entry.name not in ("__init__.py", "bootstrap.py")
    }
    bootstrap = (box / "bootstrap.py").read_text(encoding="utf-8")
    return f"{bootstrap}\ninstall({sources!r})\nfrom golem_supervisor.main import main\n\nmain()\n"
