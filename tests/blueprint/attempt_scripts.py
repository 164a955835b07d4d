"""A model provider for best-of-N runs: an Anthropic Messages API on loopback whose
conversations follow scripts of their own, however the attempts' calls interleave.

Each implement conversation (its first message holds the task) takes the next unused script,
in the order they arrive; a fix round's conversation finishes at once, changing nothing. A
conversation is told apart by the ids of its tool calls (``toolu_<script>_<turn>``), which
every later request of it sends back."""

from __future__ import annotations

import threading
from typing import Any

from golem.testing.anthropic_server import AnthropicUsage, ToolUse, stream_reply
from golem.testing.models import RecordedRequest, Reply

Turn = tuple[str, dict[str, Any]]
"""A tool call: its name and arguments."""

WRONG: list[Turn] = [
    ("edit", {"path": "calculator.py", "old": "    return a - b", "new": "    return a * b"}),
    ("finish", {"summary": "add() now multiplies"}),
]
RIGHT: list[Turn] = [
    ("edit", {"path": "calculator.py", "old": "    return a - b", "new": "    return a + b"}),
    ("finish", {"summary": "add() adds"}),
]
RIGHT_LARGER: list[Turn] = [
    ("edit", {"path": "calculator.py", "old": "    return a - b", "new": "    return a + b"}),
    ("write", {"path": "NOTES.md", "content": "".join(f"note {n}\n" for n in range(12))}),
    ("finish", {"summary": "add() adds, with notes"}),
]


class AttemptScripts:
    """The ``otherwise`` of an AnthropicServer (see the module); ``usage`` is every reply's."""

    def __init__(self, *scripts: list[Turn], usage: AnthropicUsage | None = None) -> None:
        self.scripts = scripts
        self.usage = usage or AnthropicUsage()
        self.started = 0
        self.fixes = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        last_call = _last_call_id(messages)
        if last_call is None:
            if "You are fixing" in _text(messages[0]):
                with self._lock:
                    self.fixes += 1
                return self._reply("fix", 0, ("finish", {"summary": "nothing more to fix"}))
            with self._lock:
                script, self.started = self.started, self.started + 1
            return self._reply(str(script), 0, self.scripts[script][0])
        script, turn = last_call.removeprefix("toolu_").split("_")
        return self._reply(script, int(turn) + 1, self.scripts[int(script)][int(turn) + 1])

    def _reply(self, script: str, turn: int, call: Turn) -> Reply:
        name, arguments = call
        return stream_reply(ToolUse(name, arguments, id=f"toolu_{script}_{turn}"), usage=self.usage)


def _last_call_id(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message["role"] != "assistant" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use":
                return str(block["id"])
    return None


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)
