"""The host tree as a transfer from a box would leave it, before anything is written.

A transfer is decided whole: its entries are placed, in order, in a ``TreePlan`` (the host's
tree beneath a root, read through the root's descriptor and never through a link, overlaid
with what the transfer makes, replaces and removes); every rule is checked against the plan
(``golem.sandbox.treecheck``); only then does ``golem.sandbox.landing`` write it. Placing an
entry checks its way as a write would meet it: nothing lands beneath a symlink or a file,
the host's or the transfer's own (``takeback.host-link``), and no path beneath the root
passes PATH_MAX on the host (``takeback.path``), where neither git nor a person could name it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from golem.core.errors import UnsafeBoxOutput
from golem.sandbox.hosttree import DIRECTORY_FLAGS, HostTree

__all__ = ["HostView", "Kind", "Planned", "Readable", "Source", "TreePlan"]

Kind = Literal["dir", "file", "link"]
PATH_MAX = 4096  # the kernel's limit on a path it is given, with its NUL
MISSING = (errno.ENOENT, errno.ENOTDIR)


class Readable(Protocol):
    """A planned file's bytes, read in pieces."""

    def read(self, size: int, /) -> bytes: ...


Source = Callable[[], AbstractContextManager[Readable]]
"""Opens a planned file's bytes (when it is staged, after every check passed)."""


@dataclass
class Planned:
    """What a path of the plan will hold: a directory, a file (its mode, size and where
    its bytes come from), a symlink (its target), or nothing (``kind`` None: removed).
    A planned directory is a new one (one over a directory of the host's is no change), so
    nothing of the host's tree lies beneath any planned path."""

    kind: Kind | None
    mode: int = 0o755
    size: int = 0
    source: Source | None = None
    target: str = ""


def _refused(path: str, exc: OSError) -> UnsafeBoxOutput:
    return UnsafeBoxOutput(path, f"the host could not look at it ({exc.strerror})", "takeback.path")


class HostView:
    """Kinds and link targets of a host tree, read beneath its root's descriptor with no
    link followed at any step (each parent is looked at, and found a directory, first)."""

    def __init__(self, tree: HostTree) -> None:
        self._fd = tree.root_fd
        self._kinds: dict[str, Kind | None] = {"": "dir"}

    def kind(self, path: str) -> Kind | None:
        """What is at ``path`` (relative, normalised), or None."""
        pending = []
        at = path
        while at not in self._kinds:
            pending.append(at)
            at = at.rpartition("/")[0]
        above = self._kinds[at]
        for at in reversed(pending):
            above = self._kinds[at] = self._stat(at) if above == "dir" else None
        return self._kinds[path]

    def _stat(self, path: str) -> Kind | None:
        try:
            mode = os.stat(path, dir_fd=self._fd, follow_symlinks=False).st_mode
        except OSError as exc:
            if exc.errno in MISSING:
                return None
            raise _refused(path, exc) from None
        if stat.S_ISDIR(mode):
            return "dir"
        return "link" if stat.S_ISLNK(mode) else "file"

    def target(self, path: str) -> str:
        """The target of the symlink at ``path``."""
        try:
            return os.readlink(path, dir_fd=self._fd)
        except OSError as exc:
            raise _refused(path, exc) from None

    def links(self) -> list[str]:
        """Every symlink beneath the root (its own ``.git`` aside), found through
        directory descriptors (no path, however deep, is too long for them)."""
        found: list[str] = []
        pending = [("", os.dup(self._fd))]
        while pending:
            prefix, fd = pending.pop()
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if not prefix and entry.name == ".git":
                            continue
                        path = f"{prefix}/{entry.name}" if prefix else entry.name
                        if entry.is_symlink():
                            found.append(path)
                        elif entry.is_dir(follow_symlinks=False):
                            try:
                                child = os.open(entry.name, DIRECTORY_FLAGS, dir_fd=fd)
                            except OSError:
                                continue  # unreadable to the host: nothing landed there
                            pending.append((path, child))
            finally:
                os.close(fd)
        return found


class TreePlan:
    """A host tree (``HostView``) and what a transfer does to it, entry by entry."""

    def __init__(self, tree: HostTree) -> None:
        self.host = HostView(tree)
        self.entries: dict[str, Planned] = {}
        self._children: dict[str, set[str]] = {}
        self._root_bytes = len(os.fsencode(os.path.abspath(tree.root)))
        self.links_changed = False
        """Whether the plan makes, replaces or removes a symlink or a directory (so that
        where a link of the tree leads may change)."""

    # The tree as it will be --------------------------------------------------------------

    def kind(self, path: str) -> Kind | None:
        """What will be at ``path``, or None."""
        planned = self.entries.get(path)
        if planned is not None:
            return planned.kind
        above = path
        while "/" in above:
            above = above.rpartition("/")[0]
            if above in self.entries:
                return None  # beneath a new directory, a file, a link or nothing
        return self.host.kind(path) if path else "dir"

    def target(self, path: str) -> str:
        """The target of the symlink that will be at ``path``."""
        planned = self.entries.get(path)
        return planned.target if planned is not None else self.host.target(path)

    def links(self) -> list[str]:
        """Every symlink the tree will hold (its root's ``.git`` aside)."""
        kept = [
            path
            for path in self.host.links()
            if path not in self.entries and self.kind(path) == "link"
        ]
        return kept + [path for path, planned in self.entries.items() if planned.kind == "link"]

    def in_order(self) -> list[tuple[str, Planned]]:
        """The plan's paths, every directory before what lies in it."""
        return sorted(self.entries.items(), key=lambda item: item[0].split("/"))

    # Changing the plan ------------------------------------------------------------------

    def place(self, path: str, planned: Planned) -> None:
        """``planned`` at ``path``, replacing what was there (a directory over a directory
        changes nothing); the directories on its way are made where missing."""
        self._check_length(path)
        self._make_way(path)
        before = self.kind(path)
        if planned.kind == "dir" and before == "dir":
            return
        if planned.kind == "link" or before in ("dir", "link"):
            self.links_changed = True
        self._drop_beneath(path)
        self._set(path, planned)

    def remove(self, path: str) -> None:
        """Nothing at ``path`` (and beneath it); nothing to do where nothing is."""
        before = self.kind(path)
        if before is None:
            return
        if before in ("dir", "link"):
            self.links_changed = True
        self._drop_beneath(path)
        self._set(path, Planned(None))

    def _check_length(self, path: str) -> None:
        length = self._root_bytes + 1 + len(os.fsencode(path))
        if length >= PATH_MAX:
            raise UnsafeBoxOutput(
                path,
                f"its path on the host ({length} bytes) would pass PATH_MAX ({PATH_MAX}), "
                "where neither git nor a person could name it",
                "takeback.path",
            )

    def _make_way(self, path: str) -> None:
        names = path.split("/")
        at = ""
        for name in names[:-1]:
            at = f"{at}/{name}" if at else name
            kind = self.kind(at)
            if kind is None:
                self._set(at, Planned("dir"))
            elif kind != "dir":
                raise UnsafeBoxOutput(
                    path,
                    f"{name!r} is a symlink or a file (on the host, or earlier in the "
                    "transfer), and golem never writes through one",
                    "takeback.host-link",
                )

    def _set(self, path: str, planned: Planned) -> None:
        if path not in self.entries:
            self._children.setdefault(path.rpartition("/")[0], set()).add(path)
        self.entries[path] = planned

    def _drop_beneath(self, path: str) -> None:
        pending = list(self._children.pop(path, ()))
        while pending:
            below = pending.pop()
            del self.entries[below]
            pending.extend(self._children.pop(below, ()))
