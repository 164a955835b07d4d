"""Codex's ``codex exec --json``: thread and turn events, and items (agent messages,
command executions, file changes, MCP tool calls, web searches) as they start and end.

Codex reports no model calls, so a turn here is a run of the agent's items between tool
results: one model reply and the tools it asked for.
"""

from __future__ import annotations

from typing import Any

from golem.agent.events import AgentEvent
from golem.agent.external.parsers.base import Final, OutputParser, number, text_of
from golem.agent.messages import ToolCall, Usage

__all__ = ["CodexParser"]

_TOOL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def _call_of(item: dict[str, Any]) -> ToolCall:
    """A tool item as golem's ToolCall: its kind is the name, its inputs the arguments."""
    kind = str(item.get("type"))
    if kind == "command_execution":
        arguments: dict[str, Any] = {"command": item.get("command", "")}
    elif kind == "file_change":
        arguments = {"changes": item.get("changes", [])}
    elif kind == "mcp_tool_call":
        kind = f"{item.get('server', 'mcp')}.{item.get('tool', '')}"
        raw = item.get("arguments")
        arguments = raw if isinstance(raw, dict) else {}
    else:
        arguments = {"query": item.get("query", "")}
    return ToolCall(id=str(item.get("id", "")), name=kind, arguments=arguments)


def _observation(item: dict[str, Any]) -> tuple[str, bool]:
    """What a finished tool item observed, and whether it failed."""
    kind = item.get("type")
    failed = item.get("status") == "failed"
    if kind == "command_execution":
        code = item.get("exit_code")
        return str(item.get("aggregated_output", "")), failed or code not in (0, None)
    if kind == "file_change":
        changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
        lines = [f"{c.get('kind', 'change')} {c.get('path', '')}" for c in changes]
        return "\n".join(lines), failed
    if kind == "mcp_tool_call":
        error = item.get("error")
        if error:
            return text_of(error.get("message") if isinstance(error, dict) else error), True
        result = item.get("result")
        return text_of(result.get("content") if isinstance(result, dict) else result), failed
    return "", failed


class CodexParser(OutputParser):
    """Maps codex's JSON events onto golem's."""

    reads_json = True

    def __init__(self) -> None:
        super().__init__()
        self._in_turn = False  # the current model reply has produced items already

    def on_json(self, value: dict[str, Any]) -> list[AgentEvent]:
        kind = value.get("type")
        item = value.get("item")
        if kind in ("item.started", "item.updated", "item.completed") and isinstance(item, dict):
            return self._item(item, done=kind == "item.completed")
        if kind == "turn.completed":
            self._usage(value.get("usage"))
            self.final = Final("done", self.last_text, "Codex finished")
        elif kind == "turn.failed":
            error = value.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self.final = Final("error", self.last_text, f"Codex failed: {message}"[:2000])
        return []

    def _item(self, item: dict[str, Any], *, done: bool) -> list[AgentEvent]:
        kind = item.get("type")
        if kind == "agent_message" and done:
            self._reply()
            return [self.answered(str(item.get("text", "")), [])]
        if kind not in _TOOL_ITEMS:
            return []
        events: list[AgentEvent] = []
        call_id = str(item.get("id", ""))
        if not self.started(call_id):
            if not done and item.get("status") not in (None, "in_progress"):
                return []
            self._reply()
            events.append(self.tool_started(_call_of(item)))
        if done:
            output, failed = _observation(item)
            events.append(self.tool_finished(call_id, output, failed))
            self._in_turn = False
        return events

    def _reply(self) -> None:
        """The agent produced something: a new turn unless this reply already counts."""
        if not self._in_turn:
            self.turns += 1
            self._in_turn = True

    def _usage(self, value: Any) -> None:
        if not isinstance(value, dict):
            return
        cached = number(value.get("cached_input_tokens"))
        self.usage = self.usage + Usage(
            input_tokens=max(number(value.get("input_tokens")) - cached, 0),
            output_tokens=number(value.get("output_tokens")),
            cache_read_tokens=cached,
            cache_write_tokens=number(value.get("cache_write_input_tokens")),
        )
