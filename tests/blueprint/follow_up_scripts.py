"""Scripted models of follow-up runs."""

from __future__ import annotations

import json
from pathlib import Path


def answering(tmp_path: Path, thread: int | str) -> str:
    """A scripted model that documents add() and replies in ``thread``."""
    turns = [
        {"tool_calls": [{"name": "edit", "arguments": {
            "path": "calculator.py", "old": '"""The sum of a and b."""',
            "new": '"""The sum of a and b (ints work too)."""'}}]},
        {"tool_calls": [{"name": "reply", "arguments": {
            "thread": str(thread), "body": "Done: the docstring says ints work too."}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"summary": "documented ints"}}]},
    ]  # fmt: skip
    path = tmp_path / "answer.yaml"
    path.write_text(json.dumps({"turns": turns}))  # JSON is YAML
    return f"scripted:{path}"
