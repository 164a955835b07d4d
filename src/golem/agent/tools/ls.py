"""ls: what a directory of the box holds, directories first, with sizes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import call_in_box
from golem.agent.tools.paths import resolve, shown
from golem.agent.tools.text import count, human_size
from golem.sandbox import Box

__all__ = ["LsArguments", "LsTool"]

DESCRIPTION = """List a directory (default: the working directory): directories first \
(ending with /), then files with their sizes, symbolic links with their targets. Hidden \
entries are included. Use glob to search deeper."""


class LsArguments(BaseModel):
    """Arguments of ``ls``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", min_length=1, description="The directory to list.")


class LsTool(BoxTool[LsArguments]):
    """Lists one directory of the box; at most ``max_entries`` entries are shown."""

    def __init__(self, *, max_entries: int = 500, timeout: float = 60.0) -> None:
        super().__init__("ls", DESCRIPTION, LsArguments)
        self.max_entries = max_entries
        self.timeout = timeout

    async def act(self, box: Box, arguments: LsArguments) -> ToolResult:
        """List the directory in the box."""
        path = resolve(box, arguments.path)
        request = {"op": "ls", "path": path, "max_entries": self.max_entries}
        reply = await call_in_box(box, request, self.timeout)
        name = shown(path, box.spec.workdir)
        if reply["kind"] == "file":
            return ToolResult(f"{name} is a file ({human_size(reply['size'])}), not a directory.")
        entries, total = reply["entries"], reply["total"]
        if not total:
            return ToolResult(f"{name} is empty.")
        head = f"{name}: {count(total, 'entry', 'entries')}"
        if total > len(entries):
            head += f" (the first {len(entries)} shown; use glob to narrow it down)"
        return ToolResult(f"{head}\n" + "\n".join(_entry(entry) for entry in entries))


def _entry(entry: dict[str, Any]) -> str:
    name = entry["name"]
    if entry["type"] == "dir":
        return f"{name}/"
    if entry["type"] == "link":
        return f"{name} -> {entry['target']}"
    if entry["type"] == "file":
        return f"{name}  ({human_size(entry['size'])})"
    return f"{name}  (special file)"
