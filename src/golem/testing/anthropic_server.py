"""A local server that speaks Anthropic's Messages API (``POST /v1/messages``).

Build replies with ``stream_reply`` (the SSE event sequence of a streamed message, or one
broken by an ``event: error``), ``message_reply`` (a whole JSON message) and
``error_reply`` (Anthropic's error body and status). Point the SDK at ``server.base_url``.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golem.testing.wire import RecordedRequest, Reply, WireServer, sse

__all__ = [
    "MODEL",
    "AnthropicServer",
    "AnthropicUsage",
    "Text",
    "ToolUse",
    "error_reply",
    "message_reply",
    "stream_reply",
]

MODEL = "claude-sonnet-4-5-20250929"
"""The model the replies name unless told otherwise."""


@dataclass(frozen=True)
class Text:
    """A text block, streamed as ``text_delta`` parts of ``chunk`` characters."""

    text: str
    chunk: int = 5


@dataclass(frozen=True)
class ToolUse:
    """A tool_use block. ``input`` given as a str is sent as is (it may be malformed
    JSON), in ``input_json_delta`` parts of ``chunk`` characters."""

    name: str
    input: Mapping[str, Any] | str
    id: str | None = None
    chunk: int = 7

    def input_json(self) -> str:
        """The input as the JSON text to stream."""
        return self.input if isinstance(self.input, str) else json.dumps(self.input)


Block = Text | ToolUse


@dataclass(frozen=True)
class AnthropicUsage:
    """Token counts as Anthropic reports them (input excludes cache reads and writes)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class AnthropicServer(WireServer):
    """The Messages API on loopback. With ``api_key`` set, requests that do not carry it
    (as ``x-api-key`` or ``Authorization: Bearer``) get a 401 authentication_error."""

    def __init__(self, api_key: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(tls)
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        """What to give ``AsyncAnthropic(base_url=...)``."""
        return self.url

    def check(self, request: RecordedRequest) -> Reply | None:
        """401 for a missing or wrong key, 404 for anything but POST /v1/messages."""
        if self.api_key is not None:
            sent = request.headers.get("x-api-key") or request.headers.get(
                "authorization", ""
            ).removeprefix("Bearer ")
            if sent != self.api_key:
                return error_reply(401, "authentication_error", "invalid x-api-key")
        if request.method != "POST" or request.path.split("?")[0] != "/v1/messages":
            return error_reply(404, "not_found_error", f"Not found: {request.path}")
        return None

    def no_reply_left(self, request: RecordedRequest) -> Reply:
        """A 500 that the SDK does not retry, saying the test's script ran out."""
        return error_reply(
            500,
            "api_error",
            f"wire server: no reply scripted for request {len(self.requests)}",
            {"x-should-retry": "false"},
        )


def error_reply(
    status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """An error status with Anthropic's body: ``{"type": "error", "error": {...}}``.
    Types: invalid_request_error (400), authentication_error (401), permission_error
    (403), not_found_error (404), rate_limit_error (429), api_error (500),
    overloaded_error (529)."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return Reply.json(body, status=status, headers={"request-id": "req_test", **(headers or {})})


def stream_reply(
    *blocks: Block,
    stop_reason: str | None = None,
    usage: AnthropicUsage | None = None,
    model: str = MODEL,
    error: tuple[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    cut_after: int | None = None,
    hold_after: int | None = None,
) -> Reply:
    """A streamed message: message_start, each block as content_block_start, deltas and
    content_block_stop (with a ping after the first), message_delta with the stop reason
    and output tokens, message_stop. ``stop_reason`` defaults to tool_use when a block is
    a ToolUse, else end_turn. ``error=(type, message)`` replaces message_delta and
    message_stop by an ``event: error`` (what Anthropic sends when it is overloaded
    mid-stream). ``cut_after`` and ``hold_after`` are Reply's."""
    usage = usage or AnthropicUsage()
    if stop_reason is None:
        stop_reason = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    events = [sse(_message_start(model, usage), "message_start")]
    for index, block in enumerate(blocks):
        events.extend(_block_events(index, block))
        if index == 0:
            events.append(sse({"type": "ping"}, "ping"))
    if error is not None:
        error_type, message = error
        events.append(sse(_error_body(error_type, message), "error"))
        return Reply.stream(events, headers, cut_after, hold_after)
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": usage.output_tokens},
    }
    events.append(sse(delta, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return Reply.stream(events, headers, cut_after, hold_after)


def message_reply(
    *blocks: Block,
    stop_reason: str | None = None,
    usage: AnthropicUsage | None = None,
    model: str = MODEL,
) -> Reply:
    """A whole (non-streamed) message as JSON."""
    usage = usage or AnthropicUsage()
    if stop_reason is None:
        stop_reason = "tool_use" if any(isinstance(b, ToolUse) for b in blocks) else "end_turn"
    message = _message_start(model, usage)["message"]
    message["content"] = [_block_json(i, b, complete=True) for i, b in enumerate(blocks)]
    message["stop_reason"] = stop_reason
    message["usage"]["output_tokens"] = usage.output_tokens
    return Reply.json(message)


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _message_start(model: str, usage: AnthropicUsage) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "output_tokens": 1,
            },
        },
    }


def _block_json(index: int, block: Block, *, complete: bool) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text if complete else ""}
    tool_input: Any = {}
    if complete:
        tool_input = block.input if not isinstance(block.input, str) else json.loads(block.input)
    return {
        "type": "tool_use",
        "id": block.id or f"toolu_{index:02d}",
        "name": block.name,
        "input": tool_input,
    }


def _block_events(index: int, block: Block) -> list[bytes]:
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": _block_json(index, block, complete=False),
    }
    if isinstance(block, Text):
        text, size, kind, key = block.text, block.chunk, "text_delta", "text"
    else:
        text, size, kind, key = block.input_json(), block.chunk, "input_json_delta", "partial_json"
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    deltas = [
        sse(
            {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: part}},
            "content_block_delta",
        )
        for part in parts
    ]
    stop = sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    return [sse(start, "content_block_start"), *deltas, stop]
