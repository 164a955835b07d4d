"""What every reader of a CLI's output shares: the run's tally so far, golem events made
from the CLI's own, and the CLI's final word when it gives one."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from golem.agent.events import (
    AgentEvent,
    ModelAnswered,
    OutcomeStatus,
    ToolFinished,
    ToolStarted,
)
from golem.agent.messages import Message, ModelResponse, StopReason, ToolCall, Usage

__all__ = ["Final", "OutputParser", "number", "text_of"]

SUMMARY_CHARS = 4000
"""The most of a CLI's last words kept as a summary."""


@dataclass(frozen=True)
class Final:
    """How the CLI itself says the run ended."""

    status: OutcomeStatus
    summary: str
    reason: str


class OutputParser:
    """Reads a CLI's standard output line by line. The base class keeps the tally (turns,
    usage, cost, the last thing the agent said) and reads nothing: plain text CLIs use it
    as it is; JSON-lines readers override ``on_json``."""

    reads_json = False
    """Whether standard output is JSON lines (else every line is text, JSON-looking or not)."""

    def __init__(self) -> None:
        self.turns = 0
        self.usage = Usage()
        self.cost_usd: float | None = None
        """What the CLI reported it spent, when it does."""
        self.final: Final | None = None
        self.last_text = ""
        self.model = ""
        """The model the CLI named in its last reply, if it did."""
        self._tools: dict[str, tuple[str, float]] = {}  # call id -> (name, started)
        self._tools_done = False

    def feed(self, line: str) -> list[AgentEvent]:
        """Golem events for one line of standard output: JSON objects go to ``on_json``
        when the CLI prints JSON lines, anything else to ``on_text``."""
        if not self.reads_json:
            return self.on_text(line)
        try:
            value = json.loads(line)
        except ValueError:
            return self.on_text(line)
        return self.on_json(value) if isinstance(value, dict) else []

    def on_text(self, line: str) -> list[AgentEvent]:
        """A line that is not JSON: the last ones are the summary of a text CLI."""
        if line.strip():
            self.last_text = (self.last_text + "\n" + line)[-SUMMARY_CHARS:].lstrip("\n")
        return []

    def on_json(self, value: dict[str, Any]) -> list[AgentEvent]:
        """A JSON object the CLI printed; plain text readers ignore it."""
        return []

    def answered(
        self,
        text: str,
        calls: list[ToolCall],
        *,
        usage: Usage | None = None,
        model: str = "",
        stop: StopReason | None = None,
    ) -> ModelAnswered:
        """A ModelAnswered for one reply of the CLI's model (this turn's)."""
        if text.strip():
            self.last_text = text.strip()[-SUMMARY_CHARS:]
        self.model = model or self.model
        self._tools_done = False
        if stop is None:
            stop = "tool_use" if calls else "end_turn"
        response = ModelResponse(
            message=Message(role="assistant", content=text, tool_calls=calls),
            usage=usage or Usage(),
            cost_usd=0.0,
            stop_reason=stop,
            model=model,
        )
        return ModelAnswered(
            turn=max(self.turns, 1), response=response, cost_so_far=self.cost_usd or 0.0
        )

    def tool_started(self, call: ToolCall) -> ToolStarted:
        """The CLI starts one of its tools."""
        self._tools[call.id] = (call.name, time.monotonic())
        self._tools_done = False
        return ToolStarted(call=call)

    def tool_finished(
        self, call_id: str, output: str, is_error: bool, name: str = ""
    ) -> ToolFinished:
        """One of the CLI's tools finished (``name`` when it was never seen starting)."""
        started_name, started = self._tools.pop(call_id, (name, time.monotonic()))
        self._tools_done = not self._tools
        return ToolFinished(
            call_id=call_id,
            name=started_name or name,
            output=output,
            is_error=is_error,
            duration=time.monotonic() - started,
        )

    @property
    def awaiting_model(self) -> bool:
        """Whether the CLI's next step is a model call: the tools of its last reply have
        all finished and it has not answered since."""
        return self._tools_done

    def started(self, call_id: str) -> bool:
        """Whether the call was seen starting and has not finished."""
        return call_id in self._tools


def text_of(content: Any) -> str:
    """The text of a content value: a string, or a list of blocks with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict)]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def number(value: Any) -> int:
    """An int from a JSON number (or 0)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
