"""read: a range of a text file's lines, numbered like ``cat -n``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import call_in_box
from golem.agent.tools.paths import resolve, shown
from golem.agent.tools.text import count, human_size, numbered
from golem.core.errors import ToolProblem
from golem.sandbox import Box

__all__ = ["ReadArguments", "ReadTool"]

DEFAULT_LINES = 2000
LISTED_ENTRIES = 50

DESCRIPTION = f"""Read a text file. Lines come numbered like `cat -n` (number, tab, text).
At most {DEFAULT_LINES} lines per call (and a byte cap); the result says how to read on \
with `offset`. Very long lines are cut. Relative paths start at the working directory. \
Directories, binary files and missing paths get an explanation instead (with the closest \
existing names for a missing path)."""


class ReadArguments(BaseModel):
    """Arguments of ``read``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="The file to read.")
    offset: int = Field(1, ge=1, description="Line number to start at (1 is the first line).")
    limit: int = Field(DEFAULT_LINES, ge=1, description="Read at most this many lines.")


class ReadTool(BoxTool[ReadArguments]):
    """Reads a window of a file in the box, numbered, with a note on how to read on."""

    def __init__(
        self, *, max_bytes: int = 64 * 1024, max_line: int = 2000, timeout: float = 60.0
    ) -> None:
        super().__init__("read", DESCRIPTION, ReadArguments)
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.timeout = timeout

    async def act(self, box: Box, arguments: ReadArguments) -> ToolResult:
        """Read the window in the box and render it."""
        path = resolve(box, arguments.path)
        request = {
            "op": "read",
            "path": path,
            "offset": arguments.offset,
            "limit": arguments.limit,
            "max_bytes": self.max_bytes,
            "max_line": self.max_line,
            "max_entries": LISTED_ENTRIES,
        }
        reply = await call_in_box(box, request, self.timeout)
        name = shown(path, box.spec.workdir)
        if reply["kind"] != "file":
            raise ToolProblem(_not_text(name, reply))
        return ToolResult(self._render(name, reply, arguments.offset))

    def _render(self, name: str, reply: dict[str, Any], offset: int) -> str:
        lines, total = reply["lines"], reply["total"]
        if total == 0:
            return f"({name} is empty)"
        if not lines:
            raise ToolProblem(f"{name} has {count(total, 'line')}; offset {offset} is past its end")
        parts = [numbered(lines, offset)]
        last = offset + len(lines) - 1
        if reply["stop"] is not None:
            capped = "" if reply["stop"] == "limit" else f", capped at {human_size(self.max_bytes)}"
            parts.append(
                f"[Lines {offset}-{last} of {total}{capped}. "
                f"To read on, call read with offset={last + 1}.]"
            )
        elif offset > 1:
            parts.append(f"[Lines {offset}-{last} of {total}: the end of the file.]")
        if reply["cut"]:
            parts.append(
                f"[{count(reply['cut'], 'long line')} cut at {self.max_line} characters; "
                "see them whole with bash, e.g. cut -c or fold.]"
            )
        return "\n".join(parts)


def _not_text(name: str, reply: dict[str, Any]) -> str:
    if reply["kind"] == "binary":
        return (
            f"{name} is {reply['type']} ({human_size(reply['size'])}), not text; read shows "
            "text only. Inspect it with bash instead (file, xxd | head, unzip -l ...)."
        )
    if reply["kind"] == "dir":
        return f"{name} is a directory, not a file. {listing(name, reply)}"
    return f"{name} is not a regular file (a device, socket or pipe); read cannot show it"


def listing(name: str, reply: dict[str, Any]) -> str:
    """A directory's entries on one line each, with a note when there are more."""
    entries = reply["entries"]
    if not entries:
        return f"{name} is empty."
    names = [entry["name"] + ("/" if entry["type"] == "dir" else "") for entry in entries]
    more = reply["total"] - len(entries)
    tail = f"\n  ... and {more} more (use ls)" if more > 0 else ""
    return "It holds:\n  " + "\n  ".join(names) + tail
