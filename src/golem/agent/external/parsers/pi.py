"""pi's ``--mode json``: the agent session's events, one per line.

``message_end`` of an assistant message is one model reply (text and toolCall blocks, usage
and pi's own cost); ``tool_execution_start``/``_end`` frame each tool; ``agent_end`` closes
the run.
"""

from __future__ import annotations

from typing import Any

from golem.agent.events import AgentEvent
from golem.agent.external.parsers.base import Final, OutputParser, number, text_of
from golem.agent.messages import StopReason, ToolCall, Usage

__all__ = ["PiParser"]

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "toolUse": "tool_use",
    "length": "max_tokens",
}


def _usage_of(value: Any) -> tuple[Usage, float]:
    """pi's usage object as golem's Usage, and the cost pi computed for it."""
    if not isinstance(value, dict):
        return Usage(), 0.0
    usage = Usage(
        input_tokens=number(value.get("input")),
        output_tokens=number(value.get("output")),
        cache_read_tokens=number(value.get("cacheRead")),
        cache_write_tokens=number(value.get("cacheWrite")),
    )
    cost = value.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    return usage, float(total) if isinstance(total, (int, float)) else 0.0


class PiParser(OutputParser):
    """Maps pi's session events onto golem's."""

    reads_json = True

    def __init__(self) -> None:
        super().__init__()
        self._error = ""  # the last reply's error, when pi stopped on one

    def on_json(self, value: dict[str, Any]) -> list[AgentEvent]:
        kind = value.get("type")
        message = value.get("message")
        if kind == "message_end" and isinstance(message, dict):
            if message.get("role") == "assistant":
                return [self._reply(message)]
        elif kind == "tool_execution_start":
            call = ToolCall(
                id=str(value.get("toolCallId", "")),
                name=str(value.get("toolName", "")),
                arguments=value["args"] if isinstance(value.get("args"), dict) else {},
            )
            return [self.tool_started(call)]
        elif kind == "tool_execution_end":
            result = value.get("result")
            output = text_of(result.get("content") if isinstance(result, dict) else result)
            name = str(value.get("toolName", ""))
            call_id = str(value.get("toolCallId", ""))
            return [self.tool_finished(call_id, output, bool(value.get("isError")), name)]
        elif kind == "agent_end":
            self._end()
        return []

    def _reply(self, message: dict[str, Any]) -> AgentEvent:
        self.turns += 1
        usage, cost = _usage_of(message.get("usage"))
        self.usage = self.usage + usage
        self.cost_usd = (self.cost_usd or 0.0) + cost
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        calls = [
            ToolCall(
                id=str(b.get("id", "")),
                name=str(b.get("name", "")),
                arguments=b["arguments"] if isinstance(b.get("arguments"), dict) else {},
            )
            for b in blocks
            if b.get("type") == "toolCall"
        ]
        stop = str(message.get("stopReason", ""))
        failed = stop in ("error", "aborted")
        self._error = str(message.get("errorMessage") or stop) if failed else ""
        return self.answered(
            text,
            calls,
            usage=usage,
            model=str(message.get("model", "")),
            stop=_STOP.get(stop, "other") if stop else None,
        )

    def _end(self) -> None:
        if self._error:
            self.final = Final("error", self.last_text, f"pi stopped: {self._error}"[:2000])
        else:
            self.final = Final("done", self.last_text, "pi finished")
