"""Claude Code's ``--output-format stream-json``: one JSON object per line.

``assistant`` lines carry the model's messages, one content block (text or tool_use) per
line, each passed on at once as a ModelAnswered of the turn; ``user`` lines carry the tool
results; the closing ``result`` line the outcome with turns, usage and cost.
"""

from __future__ import annotations

from typing import Any

from golem.agent.events import AgentEvent
from golem.agent.external.parsers.base import Final, OutputParser, number, text_of
from golem.agent.messages import StopReason, ToolCall, Usage

__all__ = ["ClaudeParser"]

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
}
_BUDGET_ENDS = {"error_max_turns": "turn", "error_max_budget_usd": "dollar"}


def usage_of(value: Any) -> Usage:
    """Anthropic's usage object as golem's Usage."""
    if not isinstance(value, dict):
        return Usage()
    return Usage(
        input_tokens=number(value.get("input_tokens")),
        output_tokens=number(value.get("output_tokens")),
        cache_read_tokens=number(value.get("cache_read_input_tokens")),
        cache_write_tokens=number(value.get("cache_creation_input_tokens")),
    )


def _model_usage(value: Any) -> Usage | None:
    """The run's usage summed over ``modelUsage`` (per model, camelCase): the whole run's,
    where ``usage`` may be only the last call's (it is when a limit ended the run)."""
    if not isinstance(value, dict) or not value:
        return None
    total = Usage()
    for entry in value.values():
        if isinstance(entry, dict):
            total = total + Usage(
                input_tokens=number(entry.get("inputTokens")),
                output_tokens=number(entry.get("outputTokens")),
                cache_read_tokens=number(entry.get("cacheReadInputTokens")),
                cache_write_tokens=number(entry.get("cacheCreationInputTokens")),
            )
    return total


class ClaudeParser(OutputParser):
    """Maps stream-json onto golem's events."""

    reads_json = True

    def __init__(self) -> None:
        super().__init__()
        self._message_id: str | None = None  # the assistant message of the current turn

    def on_json(self, value: dict[str, Any]) -> list[AgentEvent]:
        kind = value.get("type")
        message = value.get("message")
        if kind == "assistant" and isinstance(message, dict):
            return self._assistant(message)
        if kind == "user" and isinstance(message, dict):
            self._message_id = None  # tool results: the next assistant line is a new call
            return self._tool_results(message)
        if kind == "result":
            self._result(value)
        return []

    def _assistant(self, message: dict[str, Any]) -> list[AgentEvent]:
        # Claude Code prints a message one content block per line, each with the whole
        # message's usage: one turn, and its usage passed on with the first block only.
        message_id = str(message.get("id") or "")
        first = self._message_id is None or message_id != self._message_id
        if first:
            self.turns += 1
            self._message_id = message_id
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        calls = [
            ToolCall(
                id=str(b.get("id", "")),
                name=str(b.get("name", "")),
                arguments=b["input"] if isinstance(b.get("input"), dict) else {},
            )
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        answer = self.answered(
            text,
            calls,
            usage=usage_of(message.get("usage")) if first else Usage(),
            model=str(message.get("model", "")),
            stop=_STOP.get(str(message.get("stop_reason"))),
        )
        return [answer, *(self.tool_started(call) for call in calls)]

    def _tool_results(self, message: dict[str, Any]) -> list[AgentEvent]:
        content = message.get("content")
        if not isinstance(content, list):
            return []
        return [
            self.tool_finished(
                str(block.get("tool_use_id", "")),
                text_of(block.get("content")),
                bool(block.get("is_error")),
            )
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def _result(self, value: dict[str, Any]) -> None:
        self.usage = _model_usage(value.get("modelUsage")) or usage_of(value.get("usage"))
        cost = value.get("total_cost_usd")
        if isinstance(cost, (int, float)):
            self.cost_usd = float(cost)
        self.turns = number(value.get("num_turns")) or self.turns
        subtype = str(value.get("subtype", ""))
        summary = text_of(value.get("result")) or self.last_text
        if subtype in _BUDGET_ENDS:
            what = _BUDGET_ENDS[subtype]
            self.final = Final("budget_spent", summary, f"Claude Code hit its {what} limit")
        elif subtype == "success" and not value.get("is_error"):
            self.final = Final("done", summary, "Claude Code finished")
        else:
            errors = value.get("errors")
            detail = "; ".join(map(str, errors)) if isinstance(errors, list) else summary
            status = value.get("api_error_status")
            code = f" (API status {status})" if status else ""
            self.final = Final("error", summary, f"Claude Code failed{code}: {detail}"[:2000])
