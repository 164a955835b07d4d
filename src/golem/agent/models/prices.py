"""What model calls cost: golem's built-in price table, extended by ``[models.prices]``."""

from __future__ import annotations

import re

from golem.agent.contracts import Price
from golem.agent.messages import Usage
from golem.core.model_config import ModelsConfig

__all__ = ["BUILTIN_PRICES", "cost_usd", "price_for"]

_SONNET = Price(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
_OPUS = Price(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75)

BUILTIN_PRICES: dict[str, Price] = {
    "anthropic/claude-opus-4-5": Price(input=5.0, output=25.0, cache_read=0.50, cache_write=6.25),
    "anthropic/claude-opus-4-1": _OPUS,
    "anthropic/claude-opus-4": _OPUS,
    "anthropic/claude-opus-4-0": _OPUS,
    "anthropic/claude-sonnet-4-5": _SONNET,
    "anthropic/claude-sonnet-4": _SONNET,
    "anthropic/claude-sonnet-4-0": _SONNET,
    "anthropic/claude-3-7-sonnet": _SONNET,
    "anthropic/claude-haiku-4-5": Price(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25),
    "anthropic/claude-3-5-haiku": Price(input=0.80, output=4.0, cache_read=0.08, cache_write=1.0),
    "openai/gpt-5.1": Price(input=1.25, output=10.0, cache_read=0.125),
    "openai/gpt-5": Price(input=1.25, output=10.0, cache_read=0.125),
    "openai/gpt-5-codex": Price(input=1.25, output=10.0, cache_read=0.125),
    "openai/gpt-5-mini": Price(input=0.25, output=2.0, cache_read=0.025),
    "openai/gpt-5-nano": Price(input=0.05, output=0.40, cache_read=0.005),
    "openai/gpt-4.1": Price(input=2.0, output=8.0, cache_read=0.50),
    "openai/gpt-4.1-mini": Price(input=0.40, output=1.60, cache_read=0.10),
    "openai/gpt-4.1-nano": Price(input=0.10, output=0.40, cache_read=0.025),
    "openai/gpt-4o": Price(input=2.50, output=10.0, cache_read=1.25),
    "openai/gpt-4o-mini": Price(input=0.15, output=0.60, cache_read=0.075),
    "openai/o3": Price(input=2.0, output=8.0, cache_read=0.50),
    "openai/o3-mini": Price(input=1.10, output=4.40, cache_read=0.55),
    "openai/o4-mini": Price(input=1.10, output=4.40, cache_read=0.275),
}
"""US dollars per million tokens, by model string. Sonnet's long-context rate (prompts
over 200k tokens) is not modelled: golem's agent steps stay far below it."""

_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")
"""A dated snapshot or alias suffix: claude-sonnet-4-5-20250929, gpt-4o-2024-08-06."""


def price_for(name: str, config: ModelsConfig | None = None) -> Price | None:
    """The price of the model called ``name`` (a full model string such as
    ``openai/gpt-5``): ``config.prices`` first, then the built-in table; a dated snapshot
    costs what its family costs. None when neither knows the model."""
    prices = config.prices if config is not None else {}
    for candidate in (name, _SNAPSHOT.sub("", name)):
        if candidate in prices:
            configured = prices[candidate]
            return Price(
                input=configured.input,
                output=configured.output,
                cache_read=configured.cache_read,
                cache_write=configured.cache_write,
            )
        if candidate in BUILTIN_PRICES:
            return BUILTIN_PRICES[candidate]
    return None


def cost_usd(usage: Usage, price: Price | None) -> float:
    """US dollars that ``usage`` costs at ``price``; 0 for an unpriced model.

    ``usage.input_tokens`` counts uncached input only; cache reads and writes are billed
    at their own rates (as both providers bill them)."""
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
