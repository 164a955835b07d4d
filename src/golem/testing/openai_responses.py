"""Replies in the shape of OpenAI's Responses API (``POST /v1/responses``), which
``OpenAIServer`` answers besides Chat Completions. Codex speaks only this API.

``responses_stream_reply`` builds the server-sent events of a streamed response: the
response created and in progress, each output item added, its text or arguments in delta
events, the item done, and the response completed with its usage::

    server.push(responses_stream_reply(FunctionCall("exec_command", {"cmd": "ls"})))
    server.push(responses_stream_reply(OutputText("done")))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golem.testing.wire import Reply, sse

__all__ = ["MODEL", "FunctionCall", "OutputText", "ResponsesUsage", "responses_stream_reply"]

MODEL = "gpt-5-mini-2025-08-07"
"""The model the replies name unless told otherwise."""


@dataclass(frozen=True)
class OutputText:
    """An assistant message with one ``output_text`` part, streamed in parts of ``chunk``
    characters."""

    text: str
    chunk: int = 5


@dataclass(frozen=True)
class FunctionCall:
    """A ``function_call`` output item. ``arguments`` given as a str is sent as is."""

    name: str
    arguments: Mapping[str, Any] | str
    call_id: str | None = None
    chunk: int = 7
    namespace: str | None = None
    """The tool's namespace (Codex offers an MCP server's tools as ``mcp__<server>``)."""

    def arguments_json(self) -> str:
        """The arguments as the JSON text to stream."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


Item = OutputText | FunctionCall


@dataclass(frozen=True)
class ResponsesUsage:
    """Token counts as the Responses API reports them (``input_tokens`` includes cached
    ones)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cached_tokens: int = 0


def responses_stream_reply(
    *items: Item,
    usage: ResponsesUsage | None = None,
    model: str = MODEL,
    response_id: str = "resp_test",
) -> Reply:
    """A streamed response whose output is ``items``, ending in ``response.completed``."""
    usage = usage or ResponsesUsage()
    events: list[dict[str, Any]] = []
    started = _response(response_id, model, "in_progress", [], None)
    events.append({"type": "response.created", "response": started})
    events.append({"type": "response.in_progress", "response": started})
    done_items = []
    for index, item in enumerate(items):
        item_events, done = _item_events(index, item)
        events.extend(item_events)
        done_items.append(done)
    finished = _response(response_id, model, "completed", done_items, _usage_json(usage))
    events.append({"type": "response.completed", "response": finished})
    frames = [
        sse({**event, "sequence_number": number}, event["type"])
        for number, event in enumerate(events)
    ]
    return Reply.stream(frames)


def _response(
    response_id: str, model: str, status: str, output: list[Any], usage: Any
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
        "metadata": {},
    }


def _item_events(index: int, item: Item) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events of one output item, and the item as it is when done."""
    if isinstance(item, OutputText):
        return _message_events(index, item)
    return _function_call_events(index, item)


def _message_events(index: int, item: OutputText) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    item_id = f"msg_{index:02d}"
    where = {"item_id": item_id, "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": "", "annotations": []}
    added = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
    text = item.text
    deltas = [
        {"type": "response.output_text.delta", **where, "delta": text[i : i + item.chunk]}
        for i in range(0, len(text), item.chunk)
    ]
    whole = {**part, "text": text}
    done = {**added, "status": "completed", "content": [whole]}
    events = [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**added, "content": []},
        },
        {"type": "response.content_part.added", **where, "part": part},
        *deltas,
        {"type": "response.output_text.done", **where, "text": text},
        {"type": "response.content_part.done", **where, "part": whole},
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]
    return events, done


def _function_call_events(
    index: int, item: FunctionCall
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    item_id = f"fc_{index:02d}"
    call_id = item.call_id or f"call_{index:02d}"
    arguments = item.arguments_json()
    added = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "call_id": call_id,
        "name": item.name,
        "arguments": "",
        **({"namespace": item.namespace} if item.namespace else {}),
    }
    where = {"item_id": item_id, "output_index": index}
    deltas = [
        {
            "type": "response.function_call_arguments.delta",
            **where,
            "delta": arguments[i : i + item.chunk],
        }
        for i in range(0, len(arguments), item.chunk)
    ]
    done = {**added, "status": "completed", "arguments": arguments}
    events = [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        *deltas,
        {"type": "response.function_call_arguments.done", **where, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]
    return events, done


def _usage_json(usage: ResponsesUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
