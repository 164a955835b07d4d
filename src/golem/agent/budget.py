"""Budgets that hold: turns, input and output tokens, dollars and wall-clock time.

Every limit is checked before the spending it limits, against the worst case: a model call
is made only when its largest possible input, at the dearest input rate, plus the output
it is allowed (``max_tokens``, lowered to fit) cannot cross what is left. So a run stops at
its limit and never past it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import Price
from golem.agent.messages import Message, ModelRequest, ModelResponse, Usage
from golem.agent.models import cost_usd
from golem.core.errors import BudgetSpent

__all__ = ["Budget", "BudgetMeter"]

MESSAGE_OVERHEAD = 16
"""Tokens a provider may add around each message (roles, separators), counted generously."""
REQUEST_OVERHEAD = 512
"""Tokens a provider may add around a request (tool-use preamble, formatting)."""
MIN_OUTPUT = 256
"""A call that could not be given this many output tokens is not worth making."""


class Budget(BaseModel):
    """Limits of one agent run (None: no limit of that kind)."""

    model_config = ConfigDict(extra="forbid")

    turns: int | None = Field(50, ge=1, description="Model calls.")
    input_tokens: int | None = Field(None, ge=1, description="Input tokens, cached or not.")
    output_tokens: int | None = Field(None, ge=1, description="Output tokens.")
    usd: float | None = Field(None, gt=0, description="US dollars, from the price table.")
    wall_seconds: float | None = Field(None, gt=0, description="Elapsed seconds.")


def _bytes(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), default=str).encode())


def input_bound(request: ModelRequest, known: int, known_messages: int) -> int:
    """An upper bound of ``request``'s input tokens. ``known`` is the measured input of the
    last call, whose request held the first ``known_messages`` messages: only what came
    since is estimated, at one token per byte (no tokenizer makes a token of less)."""
    if known_messages == 0:
        fixed = _bytes(request.system) + sum(_bytes(t.model_dump()) for t in request.tools)
        known = fixed + REQUEST_OVERHEAD
    new: list[Message] = request.messages[known_messages:]
    return known + sum(_bytes(m.model_dump()) + MESSAGE_OVERHEAD for m in new)


class BudgetMeter:
    """Spending of one run against its Budget."""

    def __init__(
        self, budget: Budget, price: Price | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget = budget
        self.price = price
        self._clock = clock
        self.started = clock()
        self.turns = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self._last_input = 0  # measured input tokens of the last call (all kinds)
        self._last_messages = 0  # messages that call sent, plus its reply

    @property
    def elapsed(self) -> float:
        """Seconds since the run started."""
        return self._clock() - self.started

    def remaining_seconds(self) -> float | None:
        """Wall-clock time left, or None without a limit."""
        if self.budget.wall_seconds is None:
            return None
        return self.budget.wall_seconds - self.elapsed

    def check_time(self) -> None:
        """Stop when the wall-clock budget is spent."""
        left = self.remaining_seconds()
        if left is not None and left <= 0:
            raise BudgetSpent(f"wall-clock budget of {self.budget.wall_seconds:g}s spent")

    def admit(self, request: ModelRequest) -> ModelRequest:
        """The request as it may be sent (``max_tokens`` lowered to what the budgets leave),
        or BudgetSpent when even a small reply could cross a limit."""
        self.check_time()
        limits = self.budget
        if limits.turns is not None and self.turns >= limits.turns:
            raise BudgetSpent(f"turn budget of {limits.turns} model calls used")
        worst_input = input_bound(request, self._last_input, self._last_messages)
        spent_input = self._input_total(self.usage)
        if limits.input_tokens is not None and spent_input + worst_input > limits.input_tokens:
            raise BudgetSpent(
                f"input-token budget: the next call could read {worst_input} tokens and "
                f"{limits.input_tokens - spent_input} of {limits.input_tokens} are left"
            )
        allowed = request.max_tokens
        if limits.output_tokens is not None:
            allowed = min(allowed, limits.output_tokens - self.usage.output_tokens)
        if limits.usd is not None and self.price is not None:
            allowed = min(allowed, self._affordable_output(worst_input, allowed))
        if allowed < min(MIN_OUTPUT, request.max_tokens):
            raise BudgetSpent(self._why_not(worst_input))
        return request.model_copy(update={"max_tokens": allowed})

    def _affordable_output(self, worst_input: int, wanted: int) -> int:
        """Output tokens the dollars left can pay for after the worst-case input."""
        assert self.price is not None
        assert self.budget.usd is not None
        dearest_input = max(self.price.input, self.price.cache_write, self.price.cache_read)
        left = self.budget.usd - self.cost_usd - worst_input * dearest_input / 1e6
        if left < 0:
            return -1
        if self.price.output == 0:
            return wanted
        return math.floor(left * 1e6 / self.price.output)

    def _why_not(self, worst_input: int) -> str:
        limits = self.budget
        if limits.output_tokens is not None and (
            limits.output_tokens - self.usage.output_tokens < MIN_OUTPUT
        ):
            return f"output-token budget of {limits.output_tokens} tokens used"
        return (
            f"dollar budget: ${self.cost_usd:.4f} of ${limits.usd:g} spent; the next call "
            f"could read {worst_input} tokens and cost more than is left"
        )

    def charge(self, request: ModelRequest, response: ModelResponse) -> None:
        """Count a call's measured usage and cost."""
        self.turns += 1
        self.usage = self.usage + response.usage
        self.cost_usd += cost_usd(response.usage, self.price) if self.price else response.cost_usd
        self._last_input = self._input_total(response.usage) + response.usage.output_tokens
        self._last_messages = len(request.messages) + 1

    @staticmethod
    def _input_total(usage: Usage) -> int:
        return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
