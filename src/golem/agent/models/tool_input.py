"""Tool arguments as a model streams them: JSON text that must be one object."""

from __future__ import annotations

import json
from typing import Any

from golem.agent.messages import ToolCall

__all__ = ["parse_tool_call"]


def parse_tool_call(call_id: str, name: str, raw_arguments: str) -> ToolCall:
    """A ToolCall from the arguments' JSON text. Arguments that are not a JSON object
    give a call with ``error`` set (the loop tells the model), never an exception; empty
    text means no arguments."""
    if not raw_arguments.strip():
        return ToolCall(id=call_id, name=name, arguments={})
    try:
        arguments: Any = json.loads(raw_arguments)
    except ValueError as exc:
        return ToolCall(
            id=call_id,
            name=name,
            error=f"The arguments of {name} are not valid JSON ({exc}): {_clip(raw_arguments)}. "
            "Send them again as one JSON object.",
        )
    if not isinstance(arguments, dict):
        return ToolCall(
            id=call_id,
            name=name,
            error=f"The arguments of {name} must be a JSON object, not "
            f"{type(arguments).__name__}: {_clip(raw_arguments)}.",
        )
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
