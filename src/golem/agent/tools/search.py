"""grep and glob: find lines and paths under a directory of the box, capped and sorted."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from golem.agent.contracts import ToolResult
from golem.agent.tools.base import BoxTool
from golem.agent.tools.boxcall import call_in_box
from golem.agent.tools.paths import resolve, shown
from golem.agent.tools.text import count
from golem.sandbox import Box

__all__ = ["GlobArguments", "GlobTool", "GrepArguments", "GrepTool"]

SKIPPED = ".git, node_modules, __pycache__, .venv, venv, .tox and tool caches"

GREP_DESCRIPTION = f"""Search file contents for a regular expression (Python syntax) under \
a directory (default: the working directory) or in one file. Prints path:line: text for \
each matching line, sorted by path. Binary files and {SKIPPED} are skipped. Set literal to \
search for the text as it is, glob (e.g. *.py or src/**/*.ts) to limit the files."""

GLOB_DESCRIPTION = f"""Find files and directories whose path matches a glob pattern: * and ? \
within a name, [abc], {{a,b}}, ** for any number of directories. A pattern without / \
matches names at any depth (*.py finds every Python file). Paths are relative to the \
working directory, sorted; directories end with /. {SKIPPED} are skipped."""


class GrepArguments(BaseModel):
    """Arguments of ``grep``."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, description="Regular expression to look for.")
    path: str = Field(".", min_length=1, description="Directory or file to search.")
    glob: str | None = Field(None, description="Only files whose path matches this glob.")
    ignore_case: bool = Field(False, description="Match regardless of case.")
    literal: bool = Field(False, description="Treat pattern as plain text, not a regex.")


class GrepTool(BoxTool[GrepArguments]):
    """Searches file contents in the box; at most ``max_matches`` lines are shown."""

    def __init__(
        self, *, max_matches: int = 200, max_line: int = 300, timeout: float = 60.0
    ) -> None:
        super().__init__("grep", GREP_DESCRIPTION, GrepArguments)
        self.max_matches = max_matches
        self.max_line = max_line
        self.timeout = timeout

    async def act(self, box: Box, arguments: GrepArguments) -> ToolResult:
        """Search in the box and list the matching lines."""
        root = resolve(box, arguments.path)
        request = {
            "op": "grep",
            "path": root,
            **arguments.model_dump(exclude={"path"}),
            "max_matches": self.max_matches,
            "max_line": self.max_line,
        }
        reply = await call_in_box(box, request, self.timeout)
        workdir = box.spec.workdir
        total = reply["total"]
        if not total:
            where = shown(root, workdir).replace(".", "the working directory", root == workdir)
            return ToolResult(f"No matches for {arguments.pattern!r} in {where}.")
        matches = sorted(reply["matches"], key=lambda match: (match[0], match[1]))
        lines = [f"{shown(path, workdir)}:{number}: {text}" for path, number, text in matches]
        head = f"{count(total, 'match', 'matches')} in {count(reply['files'], 'file')}"
        if reply["stopped"]:
            head = f"at least {head} (counting stopped there)"
        if total > len(lines):
            head += f" (the first {len(lines)} shown; narrow the pattern, path or glob)"
        return ToolResult(f"{head}:\n" + "\n".join(lines))


class GlobArguments(BaseModel):
    """Arguments of ``glob``."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, description="Glob pattern, e.g. **/*.py or src/*.ts.")
    path: str = Field(".", min_length=1, description="Directory to search under.")


class GlobTool(BoxTool[GlobArguments]):
    """Finds paths by pattern in the box; at most ``max_results`` are listed."""

    def __init__(self, *, max_results: int = 500, timeout: float = 60.0) -> None:
        super().__init__("glob", GLOB_DESCRIPTION, GlobArguments)
        self.max_results = max_results
        self.timeout = timeout

    async def act(self, box: Box, arguments: GlobArguments) -> ToolResult:
        """Walk the directory in the box and list what matches."""
        request = {
            "op": "glob",
            "path": resolve(box, arguments.path),
            "pattern": arguments.pattern,
            "max_results": self.max_results,
        }
        reply = await call_in_box(box, request, self.timeout)
        paths = [shown(path, box.spec.workdir) for path in reply["paths"]]
        total = reply["total"]
        if not total:
            return ToolResult(f"No paths match {arguments.pattern!r}.")
        head = count(total, "path")
        if total > len(paths):
            head += f" (the first {len(paths)} shown; make the pattern more specific)"
        return ToolResult(f"{head}:\n" + "\n".join(paths))
