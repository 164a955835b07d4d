"""The contracts of the agent layer: a Model answers requests, a Tool acts in a box.

Callers import these, never a concrete provider or tool module (those are chosen by name,
through ``golem.agent.models.make_model`` and ``golem.agent.tools.make_tools``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from golem.agent.messages import ModelRequest, ModelResponse, ToolSpec
from golem.sandbox import Box

__all__ = ["DeltaSink", "Model", "Price", "Tool", "ToolResult"]

DeltaSink = Callable[[str], None]
"""Receives the text of a reply as it streams in (for live display)."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(Protocol):
    """A language model behind one provider, chosen by a string such as
    ``anthropic/claude-opus-4-5``."""

    name: str
    """The string it was chosen by."""
    price: Price | None
    """Its price, or None when the price table does not know it (cost is then 0)."""

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        """One call, streamed; ``on_delta`` gets text as it arrives. Retries transient
        failures (429, 5xx, overloaded) with backoff, honouring Retry-After; raises a
        ``ModelError`` when it cannot get an answer."""
        ...


@dataclass(frozen=True)
class ToolResult:
    """What a tool observed, as the model will read it."""

    output: str
    is_error: bool = False
    finished: bool = False
    """Set by ``finish``: the agent says it is done (``output`` is its summary)."""


class Tool(Protocol):
    """One tool the model may call; it runs in the session's box, never on the host."""

    spec: ToolSpec

    async def run(self, box: Box, arguments: dict[str, Any]) -> ToolResult:
        """Run with validated-or-not ``arguments`` (check them: the model may send
        anything); a problem the model can fix is a ToolResult with ``is_error``. The agent
        loop masks the box's secrets in the result, so a tool shows what it finds."""
        ...
