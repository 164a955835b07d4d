"""The contracts of the agent layer: a Model answers requests, a Tool acts in a box.

Callers import these, never a concrete provider or tool module (those are chosen by name,
through ``golem.agent.models.make_model`` and ``golem.agent.tools.make_tools``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from golem.agent.messages import ModelRequest, ModelResponse, ToolSpec
from golem.sandbox import Box

__all__ = [
    "DeltaSink",
    "LimitChange",
    "LimitLedger",
    "Model",
    "Price",
    "ProviderWait",
    "Tool",
    "ToolResult",
    "WaitSink",
    "Wakeup",
]

DeltaSink = Callable[[str], None]
"""Receives the text of a reply as it streams in (for live display)."""


@dataclass(frozen=True)
class ProviderWait:
    """A wait before a model call went out: how long, why, and which header said so."""

    seconds: float
    reason: str
    header: str | None = None
    """The provider's header, as sent (``retry-after: 3``), or None (golem's back-off,
    or waiting for another call's answer)."""


WaitSink = Callable[[ProviderWait], None]
"""Receives each wait of a model call (for the trajectory and the run's events)."""

LimitChange = Callable[[str | None], tuple[str | None, bool]]
"""A change of one limiter's record: given the record kept (JSON, None when there is none
yet), the record to keep (None: keep it as it is) and whether the waiters of that limiter
should be woken."""


class Wakeup(Protocol):
    """Set when a watched record changed; clear it, read, then wait."""

    def clear(self) -> None:
        """Forget earlier changes."""
        ...

    async def wait(self, timeout: float = ...) -> bool:
        """Wait for a change, ``timeout`` seconds at most; False if none came."""
        ...


class LimitLedger(Protocol):
    """Where the providers' limiters keep what they know, shared by every call that uses
    the ledger: golem's store across processes and machines (a store's ``limits`` is
    one), or ``MemoryLedger`` in one process."""

    async def update(self, key: str, change: LimitChange) -> None:
        """Apply ``change`` to the record of ``key`` atomically: no other change of that
        record, by any process sharing the ledger, comes between its read and its write."""
        ...

    def watch(self, key: str) -> AbstractContextManager[Wakeup]:
        """A wakeup set when ``key``'s record changes with a wake asked for."""
        ...


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
        self,
        request: ModelRequest,
        on_delta: DeltaSink | None = None,
        on_wait: WaitSink | None = None,
    ) -> ModelResponse:
        """One call, streamed; ``on_delta`` gets text as it arrives, ``on_wait`` each wait
        before a request goes out. Retries passing failures (429, 5xx, overloaded) after
        the waits its provider's limiter says, honouring retry-after and the rate-limit
        headers; raises a ``ModelError`` when it cannot get an answer (a passing one with
        ``back_at`` when the provider said when it expects to be back)."""
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
