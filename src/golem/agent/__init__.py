"""golem.agent: model providers, coding tools that act in a box, the agent loop, budgets.

The loop runs on the host; only tool calls run in the box, so model keys never enter a box.
"""

from golem.agent.contracts import DeltaSink, Model, Price, Tool, ToolResult
from golem.agent.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)

__all__ = [
    "DeltaSink",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "Price",
    "StopReason",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
]
