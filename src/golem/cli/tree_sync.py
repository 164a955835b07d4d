"""What changed between two directory trees, shown as a diff and applied to the first.

`golem agent` copies a directory into a box and lands the result in a scratch directory
(``golem.sandbox.takeback``: no .git, no link out, no special file or mode); the host
directory then changes exactly where the agent changed regular files, and nowhere else:
the changes are planned on the directory as it is (``TreePlan``: no way through a symlink,
no path past PATH_MAX, no git directory made with the directory's own files), then written
whole or not at all (``Landing``), never through a symlink.
"""

from __future__ import annotations

import difflib
import filecmp
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from golem.forge import GitRepo
from golem.sandbox.hosttree import HostTree
from golem.sandbox.landing import Landing
from golem.sandbox.takeback import landed_mode
from golem.sandbox.treecheck import check_plan
from golem.sandbox.treeplan import Planned, Source, TreePlan

__all__ = [
    "TreeChange",
    "apply_changes",
    "check_ways",
    "compare_trees",
    "render_diff",
    "without_ignored",
]

SKIPPED = frozenset({".git", "__pycache__"})
Kind = Literal["added", "deleted", "modified"]


@dataclass(frozen=True)
class TreeChange:
    """One file that differs: its path relative to the tree, and how."""

    path: str
    kind: Kind
    mode: int | None = None  # the new file's permission bits


def _files(root: Path, paths: list[str] | None) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for start in [root] if paths is None else [root / path for path in paths]:
        if not _plain_way(root, start):
            continue
        if start.is_file():
            found[start.relative_to(root).as_posix()] = start
            continue
        for directory, subdirectories, names in os.walk(start):
            subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED)
            for name in names:
                path = Path(directory) / name
                if path.is_file() and not path.is_symlink():
                    found[path.relative_to(root).as_posix()] = path
    return found


def _plain_way(root: Path, path: Path) -> bool:
    """Whether ``path`` exists beneath ``root`` with no symlink on its way (a path a box
    named is never followed out of the tree)."""
    here = root
    for name in path.relative_to(root).parts:
        here = here / name
        if here.is_symlink() or not here.exists():
            return False
    return True


def compare_trees(before: Path, after: Path, paths: list[str] | None = None) -> list[TreeChange]:
    """Files added, deleted or modified from ``before`` to ``after`` (``.git`` skipped);
    with ``paths``, only files at or beneath them."""
    old, new = _files(before, paths), _files(after, paths)
    changes: list[TreeChange] = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            changes.append(TreeChange(path, "deleted"))
        elif path not in old:
            changes.append(TreeChange(path, "added", new[path].stat().st_mode & 0o777))
        elif not filecmp.cmp(old[path], new[path], shallow=False) or (
            old[path].stat().st_mode & 0o111 != new[path].stat().st_mode & 0o111
        ):  # compared in 8 KiB pieces, never whole in memory
            changes.append(TreeChange(path, "modified", new[path].stat().st_mode & 0o777))
    return changes


async def without_ignored(changes: list[TreeChange], repo: Path) -> list[TreeChange]:
    """The changes git would not ignore, when ``repo`` is a git work tree (caches and build
    output the agent's commands left are not changes to the repository)."""
    if not changes or not (repo / ".git").exists():
        return changes
    ignored = await GitRepo(repo, check_config=False).ignored([c.path for c in changes])
    return [change for change in changes if change.path not in ignored]


def check_ways(changes: list[TreeChange], target: Path) -> None:
    """Refuse (``takeback.host-link``) a change whose way in ``target`` passes a symlink
    or a file, before anything (git included) looks at it there."""
    with HostTree(target) as tree:
        for change in changes:
            tree.check_way(change.path)


def apply_changes(
    changes: list[TreeChange], source: Path, target: Path, stop: threading.Event | None = None
) -> None:
    """Make ``target`` match ``source`` for the changed files only, whole or not at all,
    writing beneath ``target`` without following a symlink (one there is replaced, never
    written through)."""
    with HostTree(source) as origin, HostTree(target) as tree:
        plan = TreePlan(tree)
        for change in changes:
            if change.kind == "deleted":
                plan.remove(change.path)
                continue
            with origin.open_file(change.path) as handle:
                size = os.fstat(handle.fileno()).st_size
            mode = landed_mode(change.mode or 0, change.path)
            plan.place(
                change.path,
                Planned("file", mode=mode, size=size, source=_opener(origin, change.path)),
            )
        check_plan(plan, [change.path for change in changes])
        Landing(tree, plan, stop).run()


def _opener(tree: HostTree, path: str) -> Source:
    return lambda: tree.open_file(path)


MAX_DIFFED_BYTES = 1024 * 1024  # a larger file is named in the diff, not shown


def _text(path: Path) -> list[str] | None:
    """A file's lines for the diff: [] when it is not there, None when it is binary, too
    large to show, or not a regular file (read without following a link or waiting on a
    FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DIFFED_BYTES:
        os.close(fd)
        return [] if stat.S_ISDIR(info.st_mode) else None  # a directory: no file there
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_DIFFED_BYTES + 1)
    if b"\0" in data[:8192] or len(data) > MAX_DIFFED_BYTES:
        return None
    try:
        return data.decode().splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def render_diff(changes: list[TreeChange], before: Path, after: Path) -> str:
    """A unified diff of the changes (binary files named, not shown)."""
    parts: list[str] = []
    for change in changes:
        old, new = _text(before / change.path), _text(after / change.path)
        if old is None or new is None:
            parts.append(f"Binary or large file {change.path} {change.kind}\n")
            continue
        source = "/dev/null" if change.kind == "added" else f"a/{change.path}"
        target = "/dev/null" if change.kind == "deleted" else f"b/{change.path}"
        lines = difflib.unified_diff(old, new, source, target)
        parts.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return "".join(parts)
