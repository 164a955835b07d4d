"""The provider-neutral conversation: messages, tool calls, tool specs, usage, responses.

Every model provider translates these to and from its own wire format; the agent loop,
the trajectory and the scripted model speak only these.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Message",
    "ModelRequest",
    "ModelResponse",
    "Role",
    "StopReason",
    "ToolCall",
    "ToolSpec",
    "Usage",
]

Role = Literal["user", "assistant", "tool"]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "other"]
"""Why the model stopped: it finished its turn, asked for tools, hit ``max_tokens``, or
refused (a safety refusal reported by the provider)."""


class ToolCall(BaseModel):
    """The model asks for one tool to run."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The provider's id for the call; tool results refer to it.")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: str | None = Field(
        None,
        description="Set when the model's arguments were not a JSON object; the loop "
        "answers with this as an error observation instead of running the tool.",
    )


class Message(BaseModel):
    """One message of the conversation (the system prompt travels in ModelRequest)."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Assistant messages: the tools it asks for."
    )
    tool_call_id: str | None = Field(None, description="Tool messages: the call answered.")
    is_error: bool = Field(False, description="Tool messages: the tool failed.")


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, what it does, its JSON Schema parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    parameters: dict[str, Any] = Field(
        description="JSON Schema of the arguments: an object schema."
    )


class Usage(BaseModel):
    """Tokens one model call (or a sum of calls) consumed. ``input_tokens`` counts uncached
    input only; cache reads and writes are counted apart (Anthropic's convention; OpenAI's
    cached tokens are moved out of its input count)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class ModelRequest(BaseModel):
    """Everything one model call sends."""

    model_config = ConfigDict(extra="forbid")

    system: str = ""
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = Field(8192, gt=0, description="Cap on the reply's output tokens.")
    temperature: float | None = None


class ModelResponse(BaseModel):
    """One model call's answer: an assistant message, what it cost, why it stopped."""

    model_config = ConfigDict(extra="forbid")

    message: Message
    usage: Usage
    cost_usd: float = Field(description="From the price table; 0 for unpriced models.")
    stop_reason: StopReason
    model: str = Field(description="The model as the provider named it in its reply.")
