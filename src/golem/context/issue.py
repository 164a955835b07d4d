"""The issue as the agent reads it, and the repository files it names.

``files_named`` finds the paths a task or issue mentions (``src/app/x.py``, ``x.py:12``,
``x.py#L12`` in a link, a backticked name, a traceback's ``File "...", line N``) and keeps
those that are regular files of the repository (tracked or not ignored by git), with their
text: the lines around a named line, or the whole file up to a cap.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from golem.context.files import file_in_repo, list_repo_files, read_text
from golem.forge import Issue

__all__ = ["LINE_CONTEXT", "NAMED_FILE_MAX_BYTES", "NamedFile", "files_named", "render_issue"]

NAMED_FILE_MAX_BYTES = 48 * 1024
"""A file named without a line is given whole up to this many bytes."""

LINE_CONTEXT = 20
"""Lines shown before and after a named line."""

MAX_NAMED_FILES = 12
WINDOW_READ_BYTES = 4 * 1024 * 1024

TRACEBACK = re.compile(r'File "([^"\n]+)", line (\d+)')
PATH = re.compile(
    r"(?<![\w@+.-])(/?(?:[\w@+.-]+/)*[\w@+-][\w@+.-]*\.[A-Za-z][A-Za-z0-9_]{0,9})"
    r"(?::(\d+))?(?:#L(\d+))?"
)
BACKTICKED = re.compile(r"`([^`\s]+?)(?::(\d+))?`")
LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".jsx": "jsx",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".sh": "bash",
    ".md": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}


@dataclass(frozen=True)
class NamedFile:
    """A repository file the issue names, with the text the agent gets of it."""

    path: str
    """POSIX path relative to the repository's root."""
    lines: tuple[int, ...]
    """The line numbers the issue names (empty: the file as a whole)."""
    text: str
    """A fenced block of numbered lines (``cat -n`` style)."""
    truncated: bool = False
    """Whether the whole file did not fit in ``NAMED_FILE_MAX_BYTES``."""

    @property
    def title(self) -> str:
        """The path, with the line numbers the issue names."""
        if not self.lines:
            return self.path
        return f"{self.path} (line {', '.join(str(line) for line in self.lines)})"


def render_issue(issue: Issue) -> str:
    """The issue as markdown: title, where it lives, labels, body, then each comment with
    its author and date."""
    where = " ".join(
        part
        for part in (
            f"#{issue.number}" if issue.number is not None else "",
            f"in {issue.repo}" if issue.repo else "",
            f"<{issue.url}>" if issue.url else "",
        )
        if part
    )
    lines = [f"Title: {issue.title.strip()}"]
    if where:
        lines.append(f"Issue: {where}")
    if issue.labels:
        lines.append(f"Labels: {', '.join(issue.labels)}")
    lines += ["", issue.body.strip() or "(no description)"]
    for number, comment in enumerate(issue.comments, start=1):
        author = comment.author or "someone"
        date = f" on {comment.created}" if comment.created else ""
        lines += ["", f"### Comment {number}, by {author}{date}", "", comment.body.strip()]
    return "\n".join(lines)


def files_named(
    issue_text: str,
    repo: str | os.PathLike[str],
    *,
    workdir: str = "",
    limit: int = MAX_NAMED_FILES,
) -> list[NamedFile]:
    """The files of ``repo`` that ``issue_text`` names, in the order it first names them,
    at most ``limit``; paths that do not exist (or leave the repository) are ignored.

    A bare name (``x.py``) or a path's tail (an absolute path from a traceback, a link)
    counts when exactly one repository file ends with it; ``workdir`` (relative to the
    root) breaks ties.
    """
    root = Path(repo)
    repo_files = list_repo_files(root)
    by_name: dict[str, list[str]] = {}
    for path in repo_files:
        by_name.setdefault(PurePosixPath(path).name, []).append(path)
    named: dict[str, list[int]] = {}
    for candidate, line in _mentions(issue_text):
        hit = _resolve(candidate, by_name, workdir)
        if hit is None or (hit not in named and len(named) >= limit):
            continue
        lines = named.setdefault(hit, [])
        if line is not None and line not in lines:
            lines.append(line)
    found = (_named_file(root, path, sorted(lines)) for path, lines in named.items())
    return [item for item in found if item is not None]


def _mentions(text: str) -> list[tuple[str, int | None]]:
    found: list[tuple[int, str, int | None]] = []
    for match in TRACEBACK.finditer(text):
        found.append((match.start(), match[1], int(match[2])))
    for match in PATH.finditer(text):
        number = match[2] or match[3]
        found.append((match.start(), match[1], int(number) if number else None))
    for match in BACKTICKED.finditer(text):
        found.append((match.start(), match[1], int(match[2]) if match[2] else None))
    found.sort(key=lambda item: item[0])
    return [(candidate, line) for _, candidate, line in found]


def _resolve(candidate: str, by_name: dict[str, list[str]], workdir: str) -> str | None:
    parts = [part for part in PurePosixPath(candidate).parts if part not in ("/", ".")]
    if not parts or ".." in parts:
        return None
    if workdir:
        inside = "/".join([workdir, *parts])
        if inside in by_name.get(parts[-1], []):
            return inside
    for start in range(len(parts)):
        tail = "/".join(parts[start:])
        hits = [
            path for path in by_name.get(parts[-1], []) if path == tail or path.endswith(f"/{tail}")
        ]
        if workdir and len(hits) > 1:
            hits = [path for path in hits if path.startswith(f"{workdir}/")] or hits
        if len(hits) == 1:
            return hits[0]
        if hits:
            return None  # ambiguous; a shorter tail would only be more so
    return None


def _named_file(repo: Path, path: str, lines: Sequence[int]) -> NamedFile | None:
    real = file_in_repo(repo, path)
    if real is None:
        return None
    read = read_text(real, WINDOW_READ_BYTES if lines else NAMED_FILE_MAX_BYTES)
    if read is None:
        return None
    all_lines = read.text.splitlines()
    shown = [line for line in lines if 1 <= line <= len(all_lines)]
    if shown:
        body = _windows(all_lines, shown)
        truncated = False
    else:
        body = _numbered(all_lines, 1)
        truncated = read.truncated
        if truncated:
            body.append(f"[... {path} is {read.size} bytes; read the rest with the read tool]")
    return NamedFile(path, tuple(shown), _fenced(path, body), truncated)


def _windows(lines: list[str], named: Sequence[int]) -> list[str]:
    spans: list[list[int]] = []
    for line in named:
        start, end = max(1, line - LINE_CONTEXT), min(len(lines), line + LINE_CONTEXT)
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    out: list[str] = []
    for start, end in spans:
        if out or start > 1:
            out.append("   ...")
        out += _numbered(lines[start - 1 : end], start)
    if spans[-1][1] < len(lines):
        out.append("   ...")
    return out


def _numbered(lines: list[str], first: int) -> list[str]:
    return [f"{number:6}\t{line}" for number, line in enumerate(lines, start=first)]


def _fenced(path: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    runs = [len(run) for run in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    language = LANGUAGES.get(PurePosixPath(path).suffix, "")
    return f"{fence}{language}\n{body}\n{fence}"
