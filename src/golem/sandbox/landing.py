"""A planned change to a host tree (``golem.sandbox.treeplan``), written whole or not at all.

Once every rule passed on the plan, it is written in two steps. First every file's bytes
go to a staging directory beneath the root (on the tree's file system; runs of zeros left
as holes, ``SparseWriter``): a full disk or a short archive fails here, before the tree
changed at all. Then the tree is changed, each directory before what lies in it, by
renames, ``mkdir`` and ``symlink`` through directory descriptors opened with ``O_NOFOLLOW``
(``HostTree``). Whatever a path held is first renamed aside beside it, and each step is
noted: a step that fails, or a landing told to stop (its caller was cancelled), undoes the
noted steps in reverse, putting back what was aside; only a change that completed removes
what it put aside. A file is renamed into place, so a hard link of the host's is broken,
never written into, and no reader sees half a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from golem.core.errors import UnsafeBoxOutput
from golem.sandbox.holes import SparseWriter
from golem.sandbox.hosttree import HostTree, kind_at, remove_at, temporary_name
from golem.sandbox.treeplan import Planned, TreePlan

__all__ = ["Landing", "Stopped", "host_could_not", "in_thread"]

CHUNK = 256 * 1024
T = TypeVar("T")


class Stopped(Exception):
    """A landing was told to stop (its caller is gone); nothing of it was kept."""


def host_could_not(path: str, exc: OSError, doing: str = "write") -> UnsafeBoxOutput:
    """The refusal of a path the host's file system would not take (a full disk is
    ``takeback.size``; a name too long, a permission, ... ``takeback.path``)."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return UnsafeBoxOutput(
        path or ".",
        f"the host could not {doing} it ({exc.strerror})",
        "takeback.size" if full else "takeback.path",
    )


@dataclass(frozen=True)
class _Step:
    """One change made to the tree: ``name`` in the directory ``parents`` was made
    (``aside`` None), or what was there was renamed to ``aside``."""

    parents: tuple[str, ...]
    name: str
    aside: str | None


class Landing:
    """Writes ``plan`` beneath ``tree``'s root, whole or not at all."""

    def __init__(self, tree: HostTree, plan: TreePlan, stop: threading.Event | None = None) -> None:
        self.tree = tree
        self.plan = plan
        self.stop = stop
        self._steps: list[_Step] = []

    def run(self) -> None:
        """Stage the files, then change the tree (undone if any step fails)."""
        if not self.plan.entries:
            return
        staging = temporary_name()
        try:
            os.mkdir(staging, 0o700, dir_fd=self.tree.root_fd)
        except OSError as exc:
            raise host_could_not("", exc) from None
        try:
            with self.tree.opened([staging], staging) as staged_in:
                staged = self._stage(staged_in)
                self._change(staged_in, staged)
        finally:
            with contextlib.suppress(OSError):
                remove_at(self.tree.root_fd, staging)

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped()

    # Staging -----------------------------------------------------------------------------

    def _stage(self, directory: int) -> dict[str, str]:
        """Every planned file's bytes in ``directory``; path -> staged name."""
        staged: dict[str, str] = {}
        for path, planned in self.plan.entries.items():
            if planned.kind == "file":
                name = str(len(staged))
                try:
                    self._write(directory, name, planned, path)
                except OSError as exc:
                    raise host_could_not(path, exc) from None
                staged[path] = name
        return staged

    def _write(self, directory: int, name: str, planned: Planned, path: str) -> None:
        assert planned.source is not None  # a planned file always has its bytes
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o600, dir_fd=directory)
        try:
            with planned.source() as source:
                writer = SparseWriter(fd)
                left = planned.size
                while left > 0:
                    self._check_stop()
                    chunk = source.read(min(CHUNK, left))
                    if not chunk:
                        raise UnsafeBoxOutput(
                            path, "the box sent fewer bytes than it announced", "takeback.size"
                        )
                    writer.write(chunk)
                    left -= len(chunk)
                writer.finish()
            os.fchmod(fd, planned.mode)
        finally:
            os.close(fd)

    # Changing the tree -------------------------------------------------------------------

    def _change(self, staged_in: int, staged: dict[str, str]) -> None:
        try:
            for path, planned in self.plan.in_order():
                self._check_stop()
                try:
                    self._apply(path, planned, staged_in, staged.get(path, ""))
                except OSError as exc:
                    raise host_could_not(path, exc) from None
        except BaseException:
            self._undo()
            raise
        self._discard_aside()

    def _apply(self, path: str, planned: Planned, staged_in: int, staged: str) -> None:
        *parents, name = path.split("/")
        with self.tree.opened(parents, path) as parent:
            if kind_at(parent, name) is not None:  # a planned directory is a new one too
                aside = temporary_name()
                os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
                self._steps.append(_Step(tuple(parents), name, aside))
            if planned.kind is None:
                return
            if planned.kind == "dir":
                os.mkdir(name, 0o755, dir_fd=parent)
            elif planned.kind == "link":
                os.symlink(planned.target, name, dir_fd=parent)
            else:
                os.rename(staged, name, src_dir_fd=staged_in, dst_dir_fd=parent)
            self._steps.append(_Step(tuple(parents), name, None))

    def _undo(self) -> None:
        """Each noted step undone, the last first (best effort: a step that cannot be
        undone does not stop the others)."""
        for step in reversed(self._steps):
            with contextlib.suppress(OSError), self.tree.opened(step.parents, step.name) as parent:
                if step.aside is None:
                    remove_at(parent, step.name)
                else:
                    os.rename(step.aside, step.name, src_dir_fd=parent, dst_dir_fd=parent)
        self._steps.clear()

    def _discard_aside(self) -> None:
        for step in self._steps:
            if step.aside is not None:
                try:
                    with self.tree.opened(step.parents, step.name) as parent:
                        remove_at(parent, step.aside)
                except OSError as exc:
                    raise host_could_not(
                        "/".join([*step.parents, step.name]), exc, "remove what it replaced of"
                    ) from None
        self._steps.clear()


async def in_thread(work: Callable[[threading.Event], T]) -> T:
    """``work(stop)`` on a worker thread. A caller cancelled meanwhile sets ``stop`` and
    waits for the work to end (a landing undone) before it is cancelled itself: nothing of
    the work goes on, or is left half done, once its caller has gone."""
    stop = threading.Event()
    future = asyncio.ensure_future(asyncio.to_thread(work, stop))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        if not future.cancelled():
            future.exception()  # the caller meets its cancellation, not this
        raise
