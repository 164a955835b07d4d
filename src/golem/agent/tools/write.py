"""write: create or overwrite a file with the given text (parent directories are made)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import call_in_box, put_text
from golem.agent.tools.paths import resolve, shown
from golem.agent.tools.text import count, human_size, line_count, utf8
from golem.core.errors import ToolProblem
from golem.sandbox import Box

__all__ = ["WriteArguments", "WriteTool", "check_writable"]

DESCRIPTION = """Write a file: create it, or replace all of its content. Missing parent \
directories are created. Prefer edit to change part of an existing file. Relative paths \
start at the working directory."""


class WriteArguments(BaseModel):
    """Arguments of ``write``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="The file to write.")
    content: str = Field(description="The file's complete new content.")


class WriteTool(BoxTool[WriteArguments]):
    """Writes a whole file in the box and says what it wrote."""

    def __init__(self, *, timeout: float = 60.0) -> None:
        super().__init__("write", DESCRIPTION, WriteArguments)
        self.timeout = timeout

    async def act(self, box: Box, arguments: WriteArguments) -> ToolResult:
        """Check the target, write it, report lines and bytes."""
        path = resolve(box, arguments.path)
        name = shown(path, box.spec.workdir)
        probe = await call_in_box(box, {"op": "probe", "path": path}, self.timeout)
        check_writable(name, probe, box.spec.workdir)
        await put_text(box, path, arguments.content)
        size = len(utf8(arguments.content))
        wrote = f"{count(line_count(arguments.content), 'line')}, {human_size(size)}"
        if probe["kind"] == "missing":
            return ToolResult(f"Created {name} ({wrote}).")
        return ToolResult(f"Overwrote {name} ({wrote}; it had {human_size(probe['size'])}).")


def check_writable(name: str, probe: dict[str, Any], workdir: str) -> None:
    """Raise ``ToolProblem`` unless the probed path is a file (or nothing) we may write."""
    kind = probe["kind"]
    if kind == "dir":
        raise ToolProblem(f"{name} is a directory; give the path of a file")
    if kind == "other":
        raise ToolProblem(f"{name} is not a regular file (a device, socket or pipe)")
    if probe["writable"]:
        return
    if kind == "file":
        raise ToolProblem(f"cannot write {name}: the file is read-only for the box's user")
    raise ToolProblem(
        f"cannot write {name}: {probe['blocker']} is not writable in the box (read-only or "
        f"no permission); write under {workdir} or /tmp instead"
    )
