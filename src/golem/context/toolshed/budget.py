"""Toolshed tools' schemas count against the context budget: the model reads them on
every turn, beside the hydrated context."""

from __future__ import annotations

import json
from collections.abc import Sequence

from golem.agent.messages import ToolSpec
from golem.context.tokens import estimate_tokens, truncate_to_tokens
from golem.core.errors import ToolshedError

__all__ = ["fit_context", "schema_tokens"]


def schema_tokens(specs: Sequence[ToolSpec]) -> int:
    """Estimated tokens of the tools' names, descriptions and schemas."""
    return sum(estimate_tokens(json.dumps(spec.model_dump(), ensure_ascii=False)) for spec in specs)


def fit_context(context: str, specs: Sequence[ToolSpec], budget_tokens: int) -> str:
    """``context`` cut so that it and the toolshed tools' schemas fit ``budget_tokens``;
    ToolshedError when the schemas alone exceed it."""
    schemas = schema_tokens(specs)
    if schemas > budget_tokens:
        names = ", ".join(spec.name for spec in specs[:20])
        raise ToolshedError(
            f"the step's toolshed tools' schemas take about {schemas} tokens, more than the "
            f"context budget of {budget_tokens} ({len(specs)} tools: {names}...); narrow the "
            "step's toolshed patterns"
        )
    text, _ = truncate_to_tokens(context, budget_tokens - schemas)
    return text
