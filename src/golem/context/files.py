"""Reading a checked-out repository safely: its file list, paths that stay inside it, and
text read with a cap.

A repository is not trusted: a symlink may point at the host's files, a "file" may be a
FIFO that blocks whoever opens it, a text file may be gigabytes. Every read in this layer
goes through ``file_in_repo`` (regular files whose real path is inside the repository) and
``read_text`` (capped, binary refused).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from golem.core import ConfigError
from golem.forge import git_environment, run_git_blocking

__all__ = [
    "SKIPPED_DIRS",
    "FileText",
    "file_in_repo",
    "file_under",
    "list_repo_files",
    "read_bytes",
    "read_text",
    "relative_workdir",
]

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "__pycache__",
        "node_modules",
        "bower_components",
        "vendor",
        "third_party",
        "site-packages",
        "dist",
        "build",
        "target",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        "htmlcov",
        ".next",
        ".nuxt",
        ".gradle",
        ".terraform",
        "Pods",
        ".eggs",
    }
)
"""Vendored, generated and cache directories left out of the file list, tracked or not."""

SKIPPED_SUFFIXES = (".min.js", ".min.css", ".map", "_pb2.py", "_pb2.pyi", ".pb.go", ".pyc")
"""Generated files left out of the file list."""

MAX_FILES = 200_000
"""More files than this are not listed (a monorepo's map would collapse them anyway)."""

GIT_TIMEOUT = 60.0


@dataclass(frozen=True)
class FileText:
    """Text read from a repository file: at most a cap of it."""

    text: str
    size: int
    """The file's size in bytes."""
    truncated: bool
    """Whether the file is larger than what was read."""


def relative_workdir(repo: Path, workdir: str | os.PathLike[str]) -> str:
    """``workdir`` as a POSIX path relative to ``repo`` ("" for the root), whether given
    relative to the repository or absolute; a ``ConfigError`` when it lies outside."""
    root = repo.resolve()
    path = Path(workdir)
    full = (path if path.is_absolute() else root / path).resolve()
    if not full.is_relative_to(root):
        raise ConfigError(
            f"the working directory {workdir} is outside the repository {repo}; "
            "give a directory inside it (relative to its root, e.g. packages/api)"
        )
    rel = full.relative_to(root).as_posix()
    return "" if rel == "." else rel


def file_in_repo(repo: Path, rel: str) -> Path | None:
    """The real path of the regular file ``rel`` of ``repo``, or None when it does not
    exist, is not a regular file, or (through a symlink or ``..``) lies outside the repo."""
    return file_under(os.path.realpath(repo), rel)


def file_under(root: str, rel: str) -> Path | None:
    """``file_in_repo`` for a repository whose real path ``root`` is already known."""
    real = os.path.realpath(os.path.join(root, rel))
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return None
    try:
        mode = os.stat(real).st_mode
    except (OSError, ValueError):
        return None
    return Path(real) if stat.S_ISREG(mode) else None


def read_text(path: Path, max_bytes: int) -> FileText | None:
    """At most ``max_bytes`` of ``path`` as text (cut on a line boundary when capped), or
    None for a binary file (a NUL byte in its first 8 KiB) or one that cannot be read."""
    read = read_bytes(path, max_bytes + 1)
    if read is None:
        return None
    data, size = read
    if b"\0" in data[:8192]:
        return None
    truncated = len(data) > max_bytes
    if truncated:
        data = data[:max_bytes]
        newline = data.rfind(b"\n")
        if newline > 0:
            data = data[: newline + 1]
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    return FileText(text=text, size=max(size, len(data)), truncated=truncated)


def read_bytes(path: Path, max_bytes: int) -> tuple[bytes, int] | None:
    """At most ``max_bytes`` of the regular file ``path``, and its size; None when it
    cannot be read or is not a regular file."""
    # Opened without following a symlink or blocking on a FIFO, then checked again: the
    # file may have been swapped since ``file_in_repo`` looked at it.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        try:
            return handle.read(max_bytes), info.st_size
        except OSError:
            return None


def list_repo_files(repo: Path) -> list[str]:
    """The repository's files as sorted POSIX paths relative to ``repo``: what git tracks
    plus untracked files it does not ignore when ``repo`` is in a git work tree (and git
    lists anything), otherwise a walk that skips hidden directories; vendored and generated
    files left out either way."""
    listed = _git_files(repo)
    if not listed:  # not in a work tree, or one that ignores all of this directory
        listed = _walk_files(repo)
    kept = [path for path in listed if not _skipped(path)]
    return sorted(set(kept))[:MAX_FILES]


def _skipped(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts[:-1]):
        return True
    return parts[-1].endswith(SKIPPED_SUFFIXES)


def _git_files(repo: Path) -> list[str] | None:
    # Through golem's one git path, isolated from the host's git config; only reads (no
    # optional index writes).
    args = [
        "-c",
        "core.quotePath=false",
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]
    env = git_environment(isolated=True, extra={"GIT_OPTIONAL_LOCKS": "0"})
    done = run_git_blocking("git", args, cwd=repo, env=env, timeout=GIT_TIMEOUT)
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    # ls-files lists a deleted but still tracked file too; keep what is on disk.
    return [name for name in names if name and os.path.lexists(repo / name)]


def _walk_files(repo: Path) -> list[str]:
    found: list[str] = []
    for top, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        base = Path(top).relative_to(repo)
        found.extend((base / name).as_posix() for name in files)
        if len(found) > MAX_FILES:
            break
    return found
