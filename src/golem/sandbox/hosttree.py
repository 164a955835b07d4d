"""A host directory written beneath its root only, never through a symlink.

Every write walks from the root's file descriptor one name at a time with ``O_NOFOLLOW``
(``openat``-style resolution beneath the root), so a symlink already on the host (into
``.git/config``, to ``/etc``, ...) is replaced or refused, never written through. Files land
under a temporary name and are renamed into place: a hard link on the host is broken rather
than written into, and a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from golem.core.errors import UnsafeBoxOutput

__all__ = ["HostTree", "check_name", "is_git_name", "split_path"]

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = 256 * 1024
MAX_PATH_BYTES = 4096


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


class HostTree:
    """Writes beneath ``root`` (which must exist and be a directory)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.links_changed = False
        """Whether a write made, replaced or removed a symlink or a directory (so that
        where another link leads may have changed)."""
        self.before_links_change: Callable[[], None] | None = None
        """Called once, before the first such write (to note the links as they were)."""

    def close(self) -> None:
        """Release the root's descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> HostTree:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # Writing ---------------------------------------------------------------------------

    def write_file(self, path: str, source: IO[bytes], size: int, mode: int) -> None:
        """Put ``size`` bytes of ``source`` at ``path`` with ``mode`` (0644 or 0755),
        replacing whatever is there (a file, a link, a directory)."""
        *parents, name = self._names(path)
        with self._directory(parents, path) as parent:
            temporary = self._temporary_name()
            fd = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=parent,
            )
            try:
                with os.fdopen(fd, "wb", closefd=False) as sink:
                    _copy(source, sink, size, path)
                os.fchmod(fd, mode)
            except BaseException:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=parent)
                raise
            os.close(fd)
            self._replace(parent, temporary, name)

    def make_link(self, path: str, target: str) -> None:
        """Put a symlink to ``target`` at ``path`` (the caller checked the target)."""
        *parents, name = self._names(path)
        with self._directory(parents, path) as parent:
            temporary = self._temporary_name()
            self._changing_links()
            os.symlink(target, temporary, dir_fd=parent)
            self._replace(parent, temporary, name)

    def make_dir(self, path: str) -> None:
        """A directory at ``path`` (0755), replacing a file or link there."""
        names = self._names(path, allow_root=True)
        if not names:
            return
        *parents, name = names
        with self._directory(parents, path) as parent:
            kind = _kind(parent, name)
            if kind == "dir":
                return
            if kind is not None:
                if kind == "link":
                    self._changing_links()
                os.unlink(name, dir_fd=parent)
            os.mkdir(name, 0o755, dir_fd=parent)

    def remove(self, path: str) -> bool:
        """Remove what is at ``path`` (a file, a link, or a directory and all in it);
        False when nothing was there. A parent that is no directory means nothing is."""
        *parents, name = self._names(path)
        try:
            with self._directory(parents, path, create=False) as parent:
                kind = _kind(parent, name)
                if kind is None:
                    return False
                if kind in ("dir", "link"):
                    self._changing_links()
                if kind == "dir":
                    shutil.rmtree(name, dir_fd=parent)
                else:
                    os.unlink(name, dir_fd=parent)
                return True
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
                kind = _kind(fd, name)
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
        with self._directory(parents, path, create=False) as parent:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=parent)  # fmt: skip
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UnsafeBoxOutput(path, "only regular files are read", "takeback.kind")
        return os.fdopen(fd, "rb")

    # Walking ---------------------------------------------------------------------------

    def _names(self, path: str, *, allow_root: bool = False) -> list[str]:
        names = split_path(path)
        if not names and not allow_root:
            raise UnsafeBoxOutput(path, "the tree's root itself is not a file", "takeback.path")
        return names

    @contextlib.contextmanager
    def _directory(self, names: Iterable[str], path: str, *, create: bool = True) -> Iterator[int]:
        """The descriptor of the directory ``names`` beneath the root, made on the way
        when ``create``; a symlink or a file in the way is refused."""
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
                    if not create:  # nothing lies beneath a link or a file
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

    def _changing_links(self) -> None:
        if not self.links_changed:
            if self.before_links_change is not None:
                self.before_links_change()
            self.links_changed = True

    @staticmethod
    def _temporary_name() -> str:
        return f".golem-takeback-{secrets.token_hex(8)}"

    def _replace(self, parent: int, temporary: str, name: str) -> None:
        """Rename ``temporary`` onto ``name`` (a directory there is removed first)."""
        try:
            kind = _kind(parent, name)
            if kind in ("dir", "link"):
                self._changing_links()
            if kind == "dir":
                shutil.rmtree(name, dir_fd=parent)
            os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise


def _kind(parent: int, name: str) -> str | None:
    """``dir``, ``link``, ``file`` (anything else) or None, without following a link."""
    try:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    return "link" if stat.S_ISLNK(mode) else "file"


def _copy(source: IO[bytes], sink: IO[bytes], size: int, path: str) -> None:
    left = size
    while left > 0:
        chunk = source.read(min(CHUNK, left))
        if not chunk:
            raise UnsafeBoxOutput(path, "the box sent fewer bytes than it announced",
                                  "takeback.size")  # fmt: skip
        sink.write(chunk)
        left -= len(chunk)
