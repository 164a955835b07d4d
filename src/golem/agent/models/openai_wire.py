"""golem's conversation in the OpenAI Chat Completions shape, and a streamed reply back.

Requests: the system prompt leads as a ``system`` message, assistant tool calls become
``tool_calls`` (arguments as JSON text), tool messages ``role: "tool"`` messages with their
``tool_call_id``; the API has no error flag for tool results, so a failed tool's output
is prefixed with ``Error:``. Replies: chunks are assembled into a ModelResponse, tool calls
by their ``index``; a ``refusal`` becomes the content, with stop reason ``refusal``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.completion_usage import CompletionUsage

from golem.agent.contracts import DeltaSink, Price
from golem.agent.messages import Message, ModelResponse, StopReason, ToolSpec, Usage
from golem.agent.models.prices import cost_usd
from golem.agent.models.tool_input import parse_tool_call
from golem.core.errors import ModelUnavailable

__all__ = ["OpenAIReply", "openai_messages", "openai_tools"]

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def openai_tools(tools: list[ToolSpec]) -> list[ChatCompletionFunctionToolParam]:
    """Tool specs as Chat Completions ``tools`` (functions)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def openai_messages(system: str, messages: list[Message]) -> list[ChatCompletionMessageParam]:
    """The conversation as Chat Completions messages. Empty assistant replies (no text,
    no tool calls) are left out."""
    wire: list[ChatCompletionMessageParam] = []
    if system:
        wire.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "tool":
            content = f"Error: {message.content}" if message.is_error else message.content
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": content}
            )
        elif message.role == "assistant":
            if message.content or message.tool_calls:
                wire.append(_assistant(message))
        else:
            wire.append({"role": "user", "content": message.content})
    return wire


def _assistant(message: Message) -> ChatCompletionAssistantMessageParam:
    param: ChatCompletionAssistantMessageParam = {
        "role": "assistant",
        "content": message.content or None,
    }
    if message.tool_calls:
        param["tool_calls"] = [
            ChatCompletionMessageFunctionToolCallParam(
                id=call.id,
                type="function",
                function={"name": call.name, "arguments": json.dumps(call.arguments)},
            )
            for call in message.tool_calls
        ]
    return param


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)


@dataclass
class OpenAIReply:
    """A reply being assembled from Chat Completions chunks (``feed`` each one)."""

    on_delta: DeltaSink | None = None
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    _text: list[str] = field(default_factory=list)
    _refusal: list[str] = field(default_factory=list)
    _calls: dict[int, _PendingCall] = field(default_factory=dict)

    def feed(self, chunk: ChatCompletionChunk) -> None:
        """Take one chunk into the reply (only the first choice counts: golem asks for
        one)."""
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                self._emit(self._text, delta.content)
            if delta.refusal:
                self._emit(self._refusal, delta.refusal)
            for call in delta.tool_calls or []:
                pending = self._calls.setdefault(call.index, _PendingCall())
                pending.id = pending.id or call.id or ""
                if call.function is not None:
                    pending.name = pending.name or call.function.name or ""
                    pending.argument_parts.append(call.function.arguments or "")
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason

    def _emit(self, parts: list[str], text: str) -> None:
        parts.append(text)
        if self.on_delta is not None:
            self.on_delta(text)

    def response(self, price: Price | None) -> ModelResponse:
        """The finished reply. A stream that ended without a finish reason was cut off:
        ModelUnavailable, which golem retries."""
        if self.finish_reason is None:
            raise ModelUnavailable("the stream ended without a finish_reason")
        calls = [
            parse_tool_call(p.id or f"call_{i}", p.name, "".join(p.argument_parts))
            for i, p in sorted(self._calls.items())
        ]
        stop_reason = _STOP_REASONS.get(self.finish_reason, "other")
        if calls and stop_reason == "end_turn":
            stop_reason = "tool_use"  # some compatible servers say "stop" with tool calls
        content = "".join(self._text)
        if self._refusal:
            stop_reason, content = "refusal", "".join(self._refusal)
        return ModelResponse(
            message=Message(role="assistant", content=content, tool_calls=calls),
            usage=self.usage,
            cost_usd=cost_usd(self.usage, price),
            stop_reason=stop_reason,
            model=self.model,
        )


def _usage(usage: CompletionUsage) -> Usage:
    """OpenAI counts cached tokens inside ``prompt_tokens``; golem counts them apart, as
    Anthropic does, so each is billed at its own rate. OpenAI bills cache writes as
    ordinary input."""
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return Usage(
        input_tokens=max(usage.prompt_tokens - cached, 0),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cached,
    )
