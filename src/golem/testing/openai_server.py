"""A local server that speaks the OpenAI Chat Completions API
(``POST /v1/chat/completions``), and the Responses API (``POST /v1/responses``) whose
replies ``golem.testing.openai_responses`` builds.

Build replies with ``stream_reply`` (``data:`` chunks with ``choices[].delta``, tool calls
by index, a final usage chunk, ``data: [DONE]``), ``completion_reply`` (a whole JSON
completion) and ``error_reply`` (OpenAI's error body and status). Point the SDK at
``server.base_url``.
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
    "OpenAIServer",
    "OpenAIUsage",
    "ToolCall",
    "completion_reply",
    "error_reply",
    "stream_reply",
]

MODEL = "gpt-5-mini-2025-08-07"
"""The model the replies name unless told otherwise."""
ENDPOINTS = ("/v1/chat/completions", "/v1/responses")


@dataclass(frozen=True)
class ToolCall:
    """A function tool call. ``arguments`` given as a str is sent as is (it may be
    malformed JSON), in parts of ``chunk`` characters."""

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None
    chunk: int = 7

    def arguments_json(self) -> str:
        """The arguments as the JSON text to stream."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class OpenAIUsage:
    """Token counts as OpenAI reports them (``prompt_tokens`` includes cached ones)."""

    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0


class OpenAIServer(WireServer):
    """Chat Completions on loopback. With ``api_key`` set, requests without
    ``Authorization: Bearer <api_key>`` get a 401 invalid_api_key error."""

    def __init__(self, api_key: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(tls)
        self.api_key = api_key

    @property
    def base_url(self) -> str:
        """What to give ``AsyncOpenAI(base_url=...)``: the server's ``/v1``."""
        return f"{self.url}/v1"

    def check(self, request: RecordedRequest) -> Reply | None:
        """401 for a missing or wrong key, 404 for anything but POST
        /v1/chat/completions or /v1/responses."""
        key = self.api_key
        if key is not None and request.headers.get("authorization") != f"Bearer {key}":
            return error_reply(
                401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
            )
        if request.method != "POST" or request.path.split("?")[0] not in ENDPOINTS:
            return error_reply(404, f"Unknown path {request.path}", "invalid_request_error")
        return None

    def no_reply_left(self, request: RecordedRequest) -> Reply:
        """A 500 that the SDK does not retry, saying the test's script ran out."""
        return error_reply(
            500,
            f"wire server: no reply scripted for request {len(self.requests)}",
            "server_error",
            headers={"x-should-retry": "false"},
        )


def error_reply(
    status: int,
    message: str,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """An error status with OpenAI's body: ``{"error": {"message", "type", "param",
    "code"}}``. Usual pairs: 400 invalid_request_error, 401 invalid_request_error with
    code invalid_api_key, 404 invalid_request_error with code model_not_found, 429
    requests (code rate_limit_exceeded), 500 server_error."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return Reply.json(body, status=status, headers={"x-request-id": "req_test", **(headers or {})})


def stream_reply(
    text: str = "",
    *,
    tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
    refusal: str | None = None,
    finish_reason: str | None = None,
    usage: OpenAIUsage | None = None,
    model: str = MODEL,
    chunk: int = 5,
    error: Mapping[str, Any] | None = None,
    cut_after: int | None = None,
    hold_after: int | None = None,
) -> Reply:
    """A streamed completion: a role chunk, the text (or refusal) in parts of ``chunk``
    characters, the tool calls (the first chunk of each with id and name, then argument
    parts, parallel calls interleaved by index), a chunk with the finish reason, a usage
    chunk with no choices, ``[DONE]``. ``finish_reason`` defaults to tool_calls when there
    are tool calls, else stop. ``error`` sends ``{"error": error}`` as a data chunk in
    place of the finish (what a server does when it fails mid-stream). ``cut_after`` and
    ``hold_after`` are Reply's."""
    usage = usage or OpenAIUsage()
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    events = [sse(_chunk(model, {"role": "assistant", "content": ""}))]
    field, body = ("refusal", refusal) if refusal is not None else ("content", text)
    events += [sse(_chunk(model, {field: body[i : i + chunk]})) for i in range(0, len(body), chunk)]
    events += [sse(_chunk(model, {"tool_calls": [part]})) for part in _tool_call_parts(tool_calls)]
    if error is not None:
        events.append(sse({"error": dict(error)}))
        return Reply.stream(events, cut_after=cut_after, hold_after=hold_after)
    events.append(sse(_chunk(model, {}, finish_reason)))
    events.append(sse({**_chunk(model, None), "usage": _usage_json(usage)}))
    events.append(sse("[DONE]"))
    return Reply.stream(events, cut_after=cut_after, hold_after=hold_after)


def completion_reply(
    text: str | None = "",
    *,
    tool_calls: tuple[ToolCall, ...] | list[ToolCall] = (),
    finish_reason: str | None = None,
    usage: OpenAIUsage | None = None,
    model: str = MODEL,
) -> Reply:
    """A whole (non-streamed) chat completion as JSON."""
    usage = usage or OpenAIUsage()
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for index, call in enumerate(tool_calls)
        ]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
        "logprobs": None,
    }
    return Reply.json(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [choice],
            "usage": _usage_json(usage),
        }
    )


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": choices,
    }


def _tool_call_parts(calls: tuple[ToolCall, ...] | list[ToolCall]) -> list[dict[str, Any]]:
    """First chunks of every call (id, name, empty arguments), then their argument parts
    round-robin, so parallel calls arrive interleaved as OpenAI sends them."""
    heads = [
        {
            "index": index,
            "id": call.id or f"call_{index}",
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        for index, call in enumerate(calls)
    ]
    pieces = [
        [c.arguments_json()[i : i + c.chunk] for i in range(0, len(c.arguments_json()), c.chunk)]
        for c in calls
    ]
    tails = [
        {"index": index, "function": {"arguments": parts[step]}}
        for step in range(max((len(p) for p in pieces), default=0))
        for index, parts in enumerate(pieces)
        if step < len(parts)
    ]
    return heads + tails


def _usage_json(usage: OpenAIUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }
