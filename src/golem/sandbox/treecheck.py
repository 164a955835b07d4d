"""Checks of a host tree as a whole, as a transfer from a box would leave it (a
``TreePlan``), before anything is written: what no single entry shows.

- A symlink is judged by where it would lead, every link on its way followed as the kernel
  would, never only by its text: ``b -> .`` then ``up -> b/..`` is the tree's parent,
  although ``b/..`` reads as ``.``. A link that would leave the tree or pass through
  ``.git`` (or lead deeper than the host can name) is refused (``takeback.link``), unless
  the tree already had it leading there (a repository's own link out is not the box's
  doing).
- A directory that git would take for a repository's own directory (a ``HEAD`` beside
  ``objects/``, ``refs/`` or ``commondir``) is refused (``takeback.git``), whether the
  transfer's entries make it alone or with files the host already has: whoever runs git
  in it later would run that repository's config (its pager, fsmonitor, hooks).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from typing import Protocol

from golem.core.errors import UnsafeBoxOutput
from golem.sandbox.hosttree import is_git_name
from golem.sandbox.treeplan import PATH_MAX, Kind, TreePlan

__all__ = ["TreeView", "check_plan", "leads_out"]

MAX_LINKS_FOLLOWED = 40  # the kernel's own limit
GIT_DIR_PARTS = ("objects", "refs", "commondir")


class TreeView(Protocol):
    """A tree by relative paths: the host's as it is, or as a plan would leave it."""

    def kind(self, path: str) -> Kind | None: ...

    def target(self, path: str) -> str: ...

    def links(self) -> list[str]: ...


def check_plan(plan: TreePlan, paths: Iterable[str]) -> None:
    """Refuse a plan whose links would lead out (when it changes links at all), or that
    would make a git directory at or above one of ``paths`` (what the transfer holds)."""
    if plan.links_changed:
        check_links(plan)
    check_git_dirs(plan, paths)


def leads_out(view: TreeView, path: str) -> bool:
    """Whether the symlink at ``path`` leads outside the tree or through a ``.git``,
    resolved component by component (a missing component is taken as written, as the
    kernel would fail there anyway)."""
    stack = path.split("/")[:-1]
    pending = deque(view.target(path).split("/"))
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
        here = "/".join([*stack, name])
        if is_git_name(name) or len(os.fsencode(here)) >= PATH_MAX:
            return True
        if view.kind(here) != "link":
            stack.append(name)
            continue
        followed += 1
        target = view.target(here)
        if followed > MAX_LINKS_FOLLOWED or target.startswith("/"):
            return True
        pending.extendleft(reversed(target.split("/")))
    return False


def escaping_links(view: TreeView) -> set[tuple[str, str]]:
    """The symlinks of ``view`` that lead outside it or through a ``.git``, as (path,
    target)."""
    return {(path, view.target(path)) for path in view.links() if leads_out(view, path)}


def check_links(plan: TreePlan) -> None:
    """Refuse (``takeback.link``) the symlinks the plan would leave leading outside the
    tree or into ``.git`` that did not, as they are, before it."""
    new = sorted(escaping_links(plan) - escaping_links(plan.host))
    if new:
        path, target = new[0]
        raise UnsafeBoxOutput(
            path,
            f"a symlink to {target!r}, which (through the links on its way) leads outside "
            "the tree or into .git",
            "takeback.link",
        )


def check_git_dirs(view: TreeView, paths: Iterable[str]) -> None:
    """Refuse (``takeback.git``) a directory at or above one of ``paths`` that git would
    take for a repository's own directory."""
    directories = {""}
    for path in paths:
        at = path
        while at not in directories:
            directories.add(at)
            at = at.rpartition("/")[0]
    for directory in sorted(directories):
        if _is_git_dir(view, directory):
            raise UnsafeBoxOutput(
                directory or ".",
                "it holds HEAD beside objects/, refs/ or commondir: git would take it for "
                "a repository's own directory",
                "takeback.git",
            )


def _is_git_dir(view: TreeView, directory: str) -> bool:
    if view.kind(directory) != "dir":
        return False
    prefix = f"{directory}/" if directory else ""
    if view.kind(f"{prefix}HEAD") not in ("file", "link"):
        return False
    return any(view.kind(f"{prefix}{part}") is not None for part in GIT_DIR_PARTS)
