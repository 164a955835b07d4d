"""Checks of a host tree as a whole, after a transfer from a box changed it: what no single
entry shows.

- A symlink is judged by where it leads *now*, every link on its way followed as the kernel
  would, never only by its text: ``b -> .`` then ``up -> b/..`` is the tree's parent,
  although ``b/..`` reads as ``.``. A link that leaves the tree or passes through ``.git``
  is refused (``takeback.link``).
- A directory that git would take for a repository's own directory (a ``HEAD`` beside
  ``objects/``, ``refs/`` or ``commondir``) is refused (``takeback.git``): whoever runs git
  in it later would run that repository's config (its pager, fsmonitor, hooks).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

from golem.core.errors import UnsafeBoxOutput
from golem.sandbox.hosttree import HostTree, is_git_name

__all__ = ["check_git_dirs", "check_links", "escaping_links", "leaves_tree"]

MAX_LINKS_FOLLOWED = 40  # the kernel's own limit
GIT_DIR_PARTS = ("objects", "refs", "commondir")


def leaves_tree(root: Path, path: str) -> bool:
    """Whether the symlink at ``path`` (relative to ``root``) leads outside ``root`` or
    through a ``.git``, resolved component by component (a missing component is taken as
    written, as the kernel would fail there anyway)."""
    stack = [name for name in path.split("/")[:-1] if name]
    pending = deque(os.readlink(root / path).split("/"))
    if pending and pending[0] == "":
        return True  # absolute
    followed = 0
    while pending:
        name = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            if not stack:
                return True
            stack.pop()
            continue
        if is_git_name(name):
            return True
        here = root.joinpath(*stack, name)  # stack holds no links: lstat is safe
        try:
            is_link = stat.S_ISLNK(os.lstat(here).st_mode)
        except OSError:
            is_link = False
        if not is_link:
            stack.append(name)
            continue
        followed += 1
        target = os.readlink(here)
        if followed > MAX_LINKS_FOLLOWED or target.startswith("/"):
            return True
        pending.extendleft(reversed(target.split("/")))
    return False


def _links_under(root: Path) -> Iterator[str]:
    for directory, subdirectories, names in os.walk(root):
        base = Path(directory)
        if base == root:
            subdirectories[:] = [d for d in subdirectories if d != ".git"]
        for name in [*subdirectories, *names]:
            if (base / name).is_symlink():
                yield (base / name).relative_to(root).as_posix()


def escaping_links(root: Path) -> set[tuple[str, str]]:
    """The symlinks under ``root`` (its own ``.git`` aside) that lead outside it or
    through a ``.git``, as (path, target)."""
    return {
        (path, os.readlink(root / path)) for path in _links_under(root) if leaves_tree(root, path)
    }


def check_links(tree: HostTree, before: set[tuple[str, str]]) -> None:
    """Refuse (``takeback.link``) the symlinks under the tree's root that lead outside it
    or into ``.git`` and did not, as they are, before the transfer (``before``:
    ``escaping_links`` then; a repository's own link out is not the box's doing). They are
    removed first, so none is left behind."""
    new = sorted(escaping_links(tree.root) - before)
    for path, _ in new:
        tree.remove(path)
    if new:
        path, target = new[0]
        raise UnsafeBoxOutput(
            path,
            f"a symlink to {target!r}, which (through the links on its way) leads outside "
            "the tree or into .git",
            "takeback.link",
        )


def check_git_dirs(tree: HostTree, paths: Iterable[str]) -> None:
    """Refuse (``takeback.git``) a directory at or above one of ``paths`` that git would
    take for a repository's own directory; it is removed first, so none is left behind."""
    directories = {""}
    for path in paths:
        names = path.split("/")
        directories.update("/".join(names[:i]) for i in range(1, len(names) + 1))
    for directory in sorted(directories):
        if _is_git_dir(tree.root / directory if directory else tree.root):
            if directory:
                tree.remove(directory)
            raise UnsafeBoxOutput(
                directory or ".",
                "it holds HEAD beside objects/, refs/ or commondir: git would take it for "
                "a repository's own directory",
                "takeback.git",
            )


def _is_git_dir(here: Path) -> bool:
    try:
        head = here / "HEAD"
        if here.is_symlink() or not (head.is_symlink() or head.is_file()):
            return False
        return any((here / part).exists() or (here / part).is_symlink() for part in GIT_DIR_PARTS)
    except OSError:
        return False
