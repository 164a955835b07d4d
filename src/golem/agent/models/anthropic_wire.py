"""golem's conversation in Anthropic's Messages API shape, and a streamed reply back.

Requests: assistant tool calls become ``tool_use`` blocks, tool messages ``tool_result``
blocks (with ``is_error``), and consecutive messages of one role are merged into one turn,
as the API requires (all results of one assistant turn travel in a single user message).
Replies: the raw stream events are assembled into a ModelResponse; text deltas go to
``on_delta`` as they arrive, tool inputs are collected from ``input_json_delta`` parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from anthropic.types import (
    InputJSONDelta,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    TextBlockParam,
    TextDelta,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    ToolUseBlockParam,
)

from golem.agent.contracts import DeltaSink, Price
from golem.agent.messages import (
    Message,
    ModelResponse,
    StopReason,
    ToolCall,
    ToolSpec,
    Usage,
)
from golem.agent.models.prices import cost_usd
from golem.agent.models.tool_input import parse_tool_call
from golem.core.errors import ModelUnavailable

__all__ = ["AnthropicReply", "anthropic_messages", "anthropic_tools"]

Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam
Role = Literal["user", "assistant"]

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}


def anthropic_tools(tools: list[ToolSpec]) -> list[ToolParam]:
    """Tool specs as the Messages API's ``tools``."""
    return [
        ToolParam(name=tool.name, description=tool.description, input_schema=tool.parameters)
        for tool in tools
    ]


def anthropic_messages(messages: list[Message]) -> list[MessageParam]:
    """The conversation as Messages API turns: user and assistant alternate, tool results
    ride in the user turn after the assistant's ``tool_use``. Messages with nothing to
    say (an empty reply) are left out, since the API refuses empty content."""
    turns: list[tuple[Role, list[Block]]] = []
    for message in messages:
        role, blocks = _turn(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [_message_param(role, blocks) for role, blocks in turns]


def _message_param(role: Role, blocks: list[Block]) -> MessageParam:
    if role == "user":
        return {"role": "user", "content": blocks}
    return {"role": "assistant", "content": blocks}


def _turn(message: Message) -> tuple[Role, list[Block]]:
    text: list[Block] = (
        [TextBlockParam(type="text", text=message.content)] if message.content else []
    )
    if message.role == "tool":
        result = ToolResultBlockParam(
            type="tool_result",
            tool_use_id=message.tool_call_id or "",
            is_error=message.is_error,
        )
        if message.content:
            result["content"] = message.content
        return "user", [result]
    if message.role == "assistant":
        calls: list[Block] = [
            ToolUseBlockParam(type="tool_use", id=call.id, name=call.name, input=call.arguments)
            for call in message.tool_calls
        ]
        return "assistant", text + calls
    return "user", text


@dataclass
class _PendingToolUse:
    id: str
    name: str
    json_parts: list[str] = field(default_factory=list)


@dataclass
class AnthropicReply:
    """A reply being assembled from Messages API stream events (``feed`` each one)."""

    on_delta: DeltaSink | None = None
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    finished: bool = False
    _text: list[str] = field(default_factory=list)
    _text_block_begins: bool = False
    _tools: dict[int, _PendingToolUse] = field(default_factory=dict)
    _calls: dict[int, ToolCall] = field(default_factory=dict)

    def feed(self, event: RawMessageStreamEvent) -> None:
        """Take one stream event into the reply."""
        if isinstance(event, RawMessageStartEvent):
            self.model = event.message.model
            usage = event.message.usage
            self.usage = Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_input_tokens or 0,
                cache_write_tokens=usage.cache_creation_input_tokens or 0,
            )
        elif isinstance(event, RawContentBlockStartEvent):
            self._start_block(event)
        elif isinstance(event, RawContentBlockDeltaEvent):
            self._delta(event)
        elif isinstance(event, RawContentBlockStopEvent):
            self._finish_tool_use(event.index)
        elif isinstance(event, RawMessageDeltaEvent):
            self._message_delta(event)
        elif event.type == "message_stop":
            self.finished = True

    def _start_block(self, event: RawContentBlockStartEvent) -> None:
        block = event.content_block
        if isinstance(block, TextBlock):
            self._text_block_begins = bool(self._text)
            self._emit_text(block.text)
        elif isinstance(block, ToolUseBlock):
            self._tools[event.index] = _PendingToolUse(id=block.id, name=block.name)

    def _delta(self, event: RawContentBlockDeltaEvent) -> None:
        delta = event.delta
        if isinstance(delta, TextDelta):
            self._emit_text(delta.text)
        elif isinstance(delta, InputJSONDelta) and event.index in self._tools:
            self._tools[event.index].json_parts.append(delta.partial_json)

    def _message_delta(self, event: RawMessageDeltaEvent) -> None:
        if event.delta.stop_reason is not None:
            self.stop_reason = event.delta.stop_reason
        usage = event.usage
        self.usage = Usage(
            input_tokens=_latest(usage.input_tokens, self.usage.input_tokens),
            output_tokens=usage.output_tokens,
            cache_read_tokens=_latest(usage.cache_read_input_tokens, self.usage.cache_read_tokens),
            cache_write_tokens=_latest(
                usage.cache_creation_input_tokens, self.usage.cache_write_tokens
            ),
        )

    def _emit_text(self, text: str) -> None:
        if not text:
            return
        if self._text_block_begins:
            self._text_block_begins = False
            text = "\n\n" + text
        self._text.append(text)
        if self.on_delta is not None:
            self.on_delta(text)

    def _finish_tool_use(self, index: int) -> None:
        pending = self._tools.pop(index, None)
        if pending is not None:
            raw = "".join(pending.json_parts)
            self._calls[index] = parse_tool_call(pending.id, pending.name, raw)

    def response(self, price: Price | None) -> ModelResponse:
        """The finished reply. A stream that ended before ``message_stop`` was cut off:
        ModelUnavailable, which golem retries."""
        if not self.finished:
            raise ModelUnavailable("the stream ended before message_stop")
        for index in list(self._tools):
            self._finish_tool_use(index)
        text = "".join(self._text)
        calls = [self._calls[i] for i in sorted(self._calls)]
        return ModelResponse(
            message=Message(role="assistant", content=text, tool_calls=calls),
            usage=self.usage,
            cost_usd=cost_usd(self.usage, price),
            stop_reason=_STOP_REASONS.get(self.stop_reason or "", "other"),
            model=self.model,
        )


def _latest(reported: int | None, known: int) -> int:
    return known if reported is None else reported
