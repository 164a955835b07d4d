"""edit: replace an exact piece of a file; a miss names the closest lines so the model can
correct itself, several matches name their lines."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import call_in_box, get_bytes, missing, put_text
from golem.agent.tools.matching import closest, has_line_numbers, line_at, occurrences
from golem.agent.tools.paths import resolve, shown
from golem.agent.tools.text import count, human_size, line_count, numbered, split_lines
from golem.agent.tools.write import check_writable
from golem.core.errors import ToolProblem
from golem.core.masking import MASK
from golem.sandbox import Box

__all__ = ["EditArguments", "EditTool"]

CONTEXT = 4
LISTED_LINES = 20
MASKED = MASK.decode()

DESCRIPTION = """Replace text in a file: `old` must occur exactly once (copy it exactly from \
read's output, with its indentation but without the line-number prefix), unless \
replace_all is true. Include enough surrounding lines to make it unique. An empty `old` \
creates a file that does not exist yet. On a miss, the result shows the closest lines."""


class EditArguments(BaseModel):
    """Arguments of ``edit``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="The file to change.")
    old: str = Field(description="The exact text to replace.")
    new: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence of old.")


class EditTool(BoxTool[EditArguments]):
    """Exact old -> new replacement in a file in the box, with helpful misses."""

    def __init__(self, *, max_bytes: int = 4 * 1024**2, timeout: float = 60.0) -> None:
        super().__init__("edit", DESCRIPTION, EditArguments)
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def act(self, box: Box, arguments: EditArguments) -> ToolResult:
        """Load the file, replace, write it back, show the result around the change."""
        if arguments.old == arguments.new:
            raise ToolProblem("old and new are the same, so nothing would change")
        path = resolve(box, arguments.path)
        name = shown(path, box.spec.workdir)
        probe = await call_in_box(box, {"op": "probe", "path": path, "suggest": True}, self.timeout)
        if probe["kind"] == "missing" and arguments.old == "":
            check_writable(name, probe, box.spec.workdir)
            await put_text(box, path, arguments.new)
            return ToolResult(f"Created {name} ({count(line_count(arguments.new), 'line')}).")
        text = await self._load(box, path, name, probe)
        if arguments.old == "" and text:
            raise ToolProblem(
                f"old is empty but {name} is not; put the exact text to replace in old, "
                "or use write to replace the whole file"
            )
        old, new = _same_line_endings(text, arguments.old, arguments.new)
        starts = occurrences(text, old) if old else [0]
        if not starts:
            raise ToolProblem(await asyncio.to_thread(_miss, text, old, name))
        if len(starts) > 1 and not arguments.replace_all:
            raise ToolProblem(_ambiguous(text, starts, name))
        updated = text.replace(old, new, -1 if arguments.replace_all else 1) if old else new
        await put_text(box, path, updated)
        return ToolResult(_report(updated, starts, len(new) - len(old), len(new), name))

    async def _load(self, box: Box, path: str, name: str, probe: dict[str, Any]) -> str:
        if probe["kind"] == "missing":
            raise ToolProblem(missing(path, probe["suggestions"], box.spec.workdir))
        check_writable(name, probe, box.spec.workdir)
        if probe["binary"]:
            raise ToolProblem(f"{name} is {probe['binary']}, not text; edit changes text only")
        if probe["size"] > self.max_bytes:
            raise ToolProblem(
                f"{name} is {human_size(probe['size'])}, more than edit handles "
                f"({human_size(self.max_bytes)}); change it with bash (sed, python)"
            )
        try:
            return (await get_bytes(box, path)).decode("utf-8")
        except UnicodeDecodeError:
            raise ToolProblem(
                f"{name} is not UTF-8 text; change it with bash (sed, python)"
            ) from None


def _same_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Give ``old`` and ``new`` the file's CRLF line endings when the model wrote LF."""
    if "\r\n" in text and "\r" not in old:
        return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new


def _ambiguous(text: str, starts: list[int], name: str) -> str:
    where = _line_list([line_at(text, start) for start in starts])
    return (
        f"old occurs {len(starts)} times in {name} (at lines {where}); edit needs a unique "
        "match. Add surrounding lines to old so that it matches once, or set replace_all "
        "to true to change every occurrence."
    )


def _miss(text: str, old: str, name: str) -> str:
    lines = split_lines(text)
    hint = ""
    if has_line_numbers(old):
        hint = "\nold seems to start its lines with read's line numbers; leave them out."
    if MASKED in old:
        hint += (
            f"\n{MASKED} in what tools show stands for a secret, not the file's text; leave "
            "the part of a line that holds it out of old."
        )
    candidates = closest(text.replace("\r\n", "\n"), old.replace("\r\n", "\n"))
    if not candidates:
        return (
            f"old does not occur in {name}, and no lines resemble it. Read the file again "
            f"(it has {count(line_count(text), 'line')}) to see its current content.{hint}"
        )
    if candidates[0].whitespace_only:
        best = candidates[0]
        tabs = any(line.startswith("\t") for line in lines[best.first - 1 : best.last])
        indent = " (it indents with tabs)" if tabs and "\t" not in old else ""
        return (
            f"old does not occur in {name} exactly, but lines {best.first}-{best.last} match "
            f"it when whitespace is ignored: the indentation or spacing differs. The file's "
            f"exact text{indent}:\n{_excerpt(lines, best.first, best.last)}\n"
            f"Copy it exactly into old.{hint}"
        )
    shown_candidates = "\n".join(
        f"lines {c.first}-{c.last} ({round(c.score * 100)}% similar):\n"
        + _excerpt(lines, c.first, c.last)
        for c in candidates
    )
    return (
        f"old does not occur in {name}. The closest lines:\n{shown_candidates}\n"
        f"Copy the text exactly from the file into old (read it again if it changed).{hint}"
    )


def _excerpt(lines: list[str], first: int, last: int) -> str:
    return numbered(lines[first - 1 : last], first)


def _report(updated: str, starts: list[int], shift: int, size: int, name: str) -> str:
    """Where the replacements landed, and the new text around the first one."""
    new_starts = [start + index * shift for index, start in enumerate(starts)]
    first = line_at(updated, new_starts[0])
    last = line_at(updated, new_starts[0] + max(size - 1, 0))
    lines = split_lines(updated)
    low, high = max(first - CONTEXT, 1), min(last + CONTEXT, len(lines))
    if len(starts) == 1:
        head = f"Edited {name} at line {first}."
    else:
        where = _line_list([line_at(updated, start) for start in new_starts])
        head = f"Edited {name}: {len(starts)} replacements, at lines {where}. The first:"
    return f"{head}\n{_excerpt(lines, low, high)}"


def _line_list(numbers: list[int]) -> str:
    listed = ", ".join(str(number) for number in numbers[:LISTED_LINES])
    more = len(numbers) - LISTED_LINES
    return f"{listed} and {more} more" if more > 0 else listed
