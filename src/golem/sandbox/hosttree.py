"""A host directory reached beneath its root only, never through a symlink.

Every step walks from the root's file descriptor one name at a time with ``O_NOFOLLOW``
(``openat``-style resolution beneath the root), so a symlink already on the host (into
``.git/config``, to ``/etc``, ...) is never written, read or removed through; and no path,
however deep, is too long for a walk by descriptors. ``golem.sandbox.landing`` writes
through it; the names a box gives are checked here (``split_path``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Literal

from golem.core.errors import UnsafeBoxOutput

__all__ = [
    "DIRECTORY_FLAGS",
    "HostTree",
    "check_name",
    "is_git_name",
    "kind_at",
    "remove_at",
    "split_path",
    "temporary_name",
]

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_PATH_BYTES = 4096
TEMPORARY_PREFIX = ".golem-takeback-"


def is_git_name(name: str) -> bool:
    """Whether git (on any file system) would take ``name`` as ``.git``: any case, with
    trailing dots or spaces (Windows and macOS drop them), or the 8.3 short name."""
    folded = name.casefold()
    return folded.rstrip(". ") == ".git" or folded == "git~1"


def check_name(name: str, path: str) -> None:
    """Refuse a path component that is not a plain name, or is git's."""
    if name in ("", ".", "..") or "/" in name or "\0" in name:
        raise UnsafeBoxOutput(
            path, "a path must be relative, of plain names (no '..')", "takeback.path"
        )
    if is_git_name(name):
        raise UnsafeBoxOutput(
            path, "a .git path never crosses from a box to the host", "takeback.git"
        )


def split_path(path: str) -> list[str]:
    """The names of a relative path a box gave (``./`` and repeated ``/`` tolerated),
    each checked; the empty list is the root itself."""
    if path.startswith("/") or len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise UnsafeBoxOutput(
            path, "a path must be relative and shorter than 4096 bytes", "takeback.path"
        )
    names = [name for name in path.split("/") if name not in ("", ".")]
    for name in names:
        check_name(name, path)
    return names


def temporary_name() -> str:
    """A fresh name for something golem puts aside beneath a tree (never a box's)."""
    return f"{TEMPORARY_PREFIX}{secrets.token_hex(8)}"


def kind_at(parent: int, name: str) -> Literal["dir", "link", "file"] | None:
    """``dir``, ``link``, ``file`` (anything else) or None, without following a link."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    return "link" if stat.S_ISLNK(mode) else "file"


def remove_at(parent: int, name: str) -> bool:
    """Remove what is at ``name`` in ``parent`` (a directory with all in it); False when
    nothing was there."""
    kind = kind_at(parent, name)
    if kind == "dir":
        shutil.rmtree(name, dir_fd=parent)
    elif kind is not None:
        os.unlink(name, dir_fd=parent)
    return kind is not None


class HostTree:
    """A directory of the host (``root``, which must exist and be one), reached only
    beneath it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    @property
    def root_fd(self) -> int:
        """The root's descriptor (owned by the tree)."""
        return self._fd

    def close(self) -> None:
        """Release the root's descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> HostTree:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def opened(self, names: Iterable[str], path: str, *, create: bool = False) -> Iterator[int]:
        """The descriptor of the directory ``names`` beneath the root, made on the way
        when ``create``; a symlink or a file in the way is refused
        (``takeback.host-link``), or, without ``create``, is FileNotFoundError (nothing
        lies beneath one)."""
        fd = os.dup(self._fd)
        try:
            for name in names:
                try:
                    child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(name, 0o755, dir_fd=fd)
                    child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    if not create:
                        raise FileNotFoundError(path) from None
                    raise UnsafeBoxOutput(
                        path,
                        f"{name!r} on the host is a symlink or a file, and golem never writes "
                        "through one",
                        "takeback.host-link",
                    ) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def remove(self, path: str) -> bool:
        """Remove what is at ``path`` (a file, a link, or a directory and all in it);
        False when nothing was there. A parent that is no directory means nothing is."""
        *parents, name = self._names(path)
        try:
            with self.opened(parents, path) as parent:
                return remove_at(parent, name)
        except FileNotFoundError:
            return False

    def check_way(self, path: str) -> None:
        """Refuse (``takeback.host-link``) a path whose way passes a symlink on the host, as
        a write would be; a way that does not exist yet, or ends at a file, is left to the
        write."""
        *parents, _ = self._names(path)
        fd = os.dup(self._fd)
        try:
            for name in parents:
                kind = kind_at(fd, name)
                if kind in (None, "file"):  # a file there is replaced first, if at all
                    return
                if kind == "link":
                    raise UnsafeBoxOutput(
                        path,
                        f"{name!r} on the host is a symlink, and golem never writes through one",
                        "takeback.host-link",
                    )
                child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        finally:
            os.close(fd)

    def open_file(self, path: str) -> IO[bytes]:
        """A regular file beneath the root, opened for reading without following a
        symlink at any step."""
        *parents, name = self._names(path)
        with self.opened(parents, path) as parent:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent
            )
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafeBoxOutput(path, "only regular files are read", "takeback.kind")
        return os.fdopen(fd, "rb")

    def _names(self, path: str) -> list[str]:
        names = split_path(path)
        if not names:
            raise UnsafeBoxOutput(path, "the tree's root itself is not a file", "takeback.path")
        return names
