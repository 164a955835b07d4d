"""Directories of a box kept on the host as a tar archive that only another box unpacks.

What a dependency install made in its box (``.venv``, ``node_modules``, a cargo or go cache)
crosses to the host as a tar stream, like a takeback, but is never unpacked there: the host
keeps a new archive written from the box's entries, checked one by one, and later uploads
it into another box of the same repository. The stream is spooled (capped) and read with
tarfile behind takeback's capped reader, and each entry is checked:

- ``takeback.path``: relative paths of plain names only, and only beneath the directories
  the host asked for; nothing beneath a symlink of the archive.
- ``takeback.git``: no name ``.git`` anywhere (nor a link into one). A fork's copy
  (``git_names``) carries a nested repository's ``.git`` (a submodule's, a vendored
  repository's) under a name of golem's own (``escape_git``) that no git takes for
  ``.git``, and only the box it is unpacked into sees the name again (``archive_part``):
  the host never holds a ``.git``; a link into one is refused all the same.
- ``takeback.kind``: regular files, directories and symlinks only.
- ``takeback.mode``: no setuid, setgid or sticky bit; files are kept 0644 or 0755,
  directories 0755, owned by nobody in particular (uid and gid 0, no names).
- ``takeback.size``: no file over ``max_file_bytes``, no archive over ``max_bytes`` (both
  within what the box could hold, with ``TakebackLimits.of``), at most ``max_entries``
  entries; the archive is written with the zeros of its files as holes, so a sparse file
  costs the host's disk what it cost the box's.

A symlink's target is kept as it is (a virtual environment's ``bin/python3`` names the
interpreter of the box's image, ``/usr/bin/python3``): it resolves only inside a box, whose
unpacking keeps every entry inside the directory it unpacks to, and nothing of the archive
is ever written through one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import tarfile
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Generic, TypeVar

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.sandbox.holes import SparseWriter
from golem.sandbox.hosttree import is_git_name, split_path
from golem.sandbox.limits import TakebackLimits
from golem.sandbox.takeback import landed_mode
from golem.sandbox.tarspool import BROKEN, archive_members, opened_archive, spooled

__all__ = [
    "GIT_ESCAPE",
    "ArchiveRewriter",
    "KeptArchive",
    "archive_part",
    "escape_git",
    "is_regular",
    "keep_archive",
    "unescape_git",
]

MAX_LINK = 4096
GIT_ESCAPE = "golem-escaped~"
"""The prefix of a name a fork's copy escapes: a ``.git`` of any spelling, and a name that
begins with the prefix itself (so that escaping is one-to-one)."""


def escape_git(name: str) -> str:
    """``name`` as a fork's copy keeps it on the host: never one git takes for ``.git``."""
    return GIT_ESCAPE + name if is_git_name(name) or name.startswith(GIT_ESCAPE) else name


def unescape_git(name: str) -> str:
    """The name ``escape_git`` kept as ``name``, as the box had it."""
    return name.removeprefix(GIT_ESCAPE)


MAX_MTIME = 8**11 - 1  # what a ustar header's mtime field holds


@dataclass(frozen=True)
class KeptArchive:
    """What an archive kept: its size on disk, its entries and the asked-for directories
    it held (those the box did not make are missing)."""

    size: int
    entries: int
    found: list[str]


async def keep_archive(
    chunks: AsyncIterable[bytes],
    destination: Path,
    limits: TakebackLimits,
    *,
    within: Sequence[str],
    git_names: bool = False,
) -> KeptArchive:
    """Check a tar stream from a box entry by entry (the rules above) and write the entries
    allowed beneath ``within`` (relative directories) as a new archive at ``destination``,
    atomically: nothing is there unless every entry passed. With ``git_names`` (a fork's
    copy), a ``.git`` is kept under its escaped name instead of refused."""
    roots = [tuple(split_path(path)) for path in within]
    if not roots or any(not root for root in roots):
        raise ValueError("keep_archive needs directories beneath the root to keep")
    destination.parent.mkdir(parents=True, exist_ok=True)
    async with spooled(chunks, limits, str(destination.parent)) as spool:
        keeper = _Keeper(limits, roots, git_names=git_names)
        return await asyncio.to_thread(keeper.write, spool, destination)


R = TypeVar("R")


class ArchiveRewriter(ABC, Generic[R]):
    """A box's archive written again, entry by entry, each checked by ``entry`` (a
    subclass's rules), atomically: nothing is at the destination unless every entry and
    then ``check_whole`` passed. The count, name and size caps of ``TakebackLimits`` and
    the rules for a regular file's data are the same for every kind of kept archive."""

    def __init__(self, limits: TakebackLimits) -> None:
        self.limits = limits
        self.total = 0
        self.name_bytes = 0

    @abstractmethod
    def entry(
        self, archive: tarfile.TarFile, member: tarfile.TarInfo
    ) -> tuple[tarfile.TarInfo, IO[bytes] | None] | None:
        """The header and data to keep for ``member`` (None: the archive's root, left
        out), or UnsafeBoxOutput naming the rule it breaks."""

    @abstractmethod
    def result(self, size: int, entries: int) -> R:
        """What was kept, once it is at the destination."""

    def check_whole(self) -> None:
        """A rule about the archive as a whole, after its last entry (none by default)."""

    def write(self, spool: IO[bytes], destination: Path) -> R:
        handle, temp = tempfile.mkstemp(prefix=".golem-keep-", dir=destination.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                sink = SparseWriter(out.fileno())  # the zeros of the box's files cost no disk
                entries = self._copy(spool, sink)
                self.check_whole()
                sink.finish()
                os.fsync(out.fileno())
            os.replace(temp, destination)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
        return self.result(destination.stat().st_size, entries)

    def _copy(self, spool: IO[bytes], out: SparseWriter) -> int:
        entries = 0
        with (
            opened_archive(spool) as archive,
            tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as kept,  # type: ignore[call-overload]
        ):
            for member in archive_members(archive):
                entries += 1
                archive.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
                self._count(member.name, entries)
                checked = self.entry(archive, member)
                if checked is None:
                    continue
                info, source = checked
                try:
                    kept.addfile(info, source)
                except BROKEN as exc:
                    raise UnsafeBoxOutput(
                        info.name, f"a broken tar entry ({exc})", "takeback.kind"
                    ) from None
        return entries

    def _count(self, name: str, count: int) -> None:
        self.name_bytes += len(name.encode("utf-8", "surrogateescape"))
        if count > self.limits.max_entries or self.name_bytes > self.limits.max_name_bytes:
            raise UnsafeBoxOutput(
                name,
                f"the box sent more than {self.limits.max_entries} entries or "
                f"{format_size(self.limits.max_name_bytes)} of names",
                "takeback.size",
            )

    @staticmethod
    def header(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        """A new header named ``path``, its time ``member``'s within a ustar field."""
        info = tarfile.TarInfo(path)
        info.mtime = min(max(int(member.mtime), 0), MAX_MTIME)
        return info

    def regular_file(
        self, archive: tarfile.TarFile, member: tarfile.TarInfo, info: tarfile.TarInfo
    ) -> IO[bytes] | None:
        """A regular file's data, its mode landed and its size within the caps."""
        path = info.name
        if member.size < 0:
            raise UnsafeBoxOutput(path, "a negative size", "takeback.kind")
        info.mode = landed_mode(member.mode, path)
        if member.size > self.limits.max_file_bytes:
            raise self.limits.file_too_large(path, member.size)
        self.total += member.size
        if self.total > self.limits.max_bytes:
            raise UnsafeBoxOutput(
                path, f"the archive passed {self.limits.transfer_limit()}", "takeback.size"
            )
        info.size = member.size
        return archive.extractfile(member)


def is_regular(member: tarfile.TarInfo) -> bool:
    """A regular file with its data in the archive (not sparse)."""
    return member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and member.sparse is None


class _Keeper(ArchiveRewriter[KeptArchive]):
    """A directory tree's entries: beneath the roots the host asked for, symlinks kept as
    data, nothing beneath one."""

    def __init__(
        self, limits: TakebackLimits, roots: list[tuple[str, ...]], *, git_names: bool = False
    ) -> None:
        super().__init__(limits)
        self.roots = roots
        self.git_names = git_names
        self.links: set[tuple[str, ...]] = set()
        self.found: set[str] = set()

    def result(self, size: int, entries: int) -> KeptArchive:
        return KeptArchive(size, entries, sorted(self.found))

    def entry(
        self, archive: tarfile.TarFile, member: tarfile.TarInfo
    ) -> tuple[tarfile.TarInfo, IO[bytes] | None] | None:
        names = tuple(self._names(member.name))
        if not names:
            return None
        path = "/".join(names)
        if not any(names[: len(root)] == root for root in self.roots):
            raise UnsafeBoxOutput(path, "golem did not ask the box for this path", "takeback.path")
        if any(names[:index] in self.links for index in range(1, len(names))):
            raise UnsafeBoxOutput(path, "it lies beneath a symlink of the archive", "takeback.link")
        self.found.update("/".join(root) for root in self.roots if names[: len(root)] == root)
        info = self.header(member, path)
        if member.isdir():
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            return info, None
        if member.issym():
            info.type, info.mode = tarfile.SYMTYPE, 0o777
            info.linkname = _checked_link(path, member.linkname)
            self.links.add(names)
            return info, None
        if is_regular(member):
            return info, self.regular_file(archive, member, info)
        raise UnsafeBoxOutput(
            path,
            "it is not a regular file, directory or symlink; only those are kept",
            "takeback.kind",
        )

    def _names(self, path: str) -> list[str]:
        """The checked names of ``path``; a fork's copy escapes git's names first."""
        if not self.git_names:
            return split_path(path)
        if path.startswith("/"):
            return split_path(path)  # refused, as any absolute path
        escaped = [escape_git(name) for name in path.split("/") if name not in ("", ".")]
        return split_path("/".join(escaped))


def _checked_link(path: str, target: str) -> str:
    """A symlink's target, kept as data unless it is empty, oversized or names a .git."""
    if not target or "\0" in target or len(target) > MAX_LINK:
        raise UnsafeBoxOutput(path, f"a symlink to {target[:200]!r}", "takeback.link")
    if any(is_git_name(name) for name in target.split("/") if name):
        raise UnsafeBoxOutput(path, f"a symlink to {target!r} leads into .git", "takeback.link")
    return target


async def archive_part(
    handle: BinaryIO, prefix: str, *, git_names: bool = False
) -> AsyncIterator[bytes]:
    """The entries of a kept archive (read from ``handle``'s start) beneath the relative
    directory ``prefix``, as a tar stream of their own named relative to it: the part a box
    unpacks into one of its directories (with ``git_names``, a fork's copy: its escaped
    names as the box had them). The archive is golem's own (``keep_archive`` wrote it,
    every entry checked); read in a worker thread, a chunk at a time."""
    chunks: _Chunks = queue.Queue(maxsize=PART_CHUNKS)
    stop = threading.Event()
    part = _Part(tuple(split_path(prefix)), git_names)
    worker = threading.Thread(target=_write_part, args=(handle, part, chunks, stop), daemon=True)
    worker.start()
    try:
        while (chunk := await asyncio.to_thread(chunks.get)) is not None:
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                chunks.get_nowait()  # let a blocked writer see the stop
        await asyncio.to_thread(worker.join)


PART_CHUNKS = 8
PART_CHUNK = 1024 * 1024
_Chunks = queue.Queue[bytes | BaseException | None]


class _Sink:
    """A file-like tarfile writes into: chunks of ``PART_CHUNK`` bytes onto the queue."""

    def __init__(self, chunks: _Chunks, stop: threading.Event) -> None:
        self.chunks, self.stop, self.buffer = chunks, stop, bytearray()

    def write(self, data: bytes) -> int:
        self.buffer += data
        while len(self.buffer) >= PART_CHUNK:
            self.put(bytes(self.buffer[:PART_CHUNK]))
            del self.buffer[:PART_CHUNK]
        return len(data)

    def flush_all(self) -> None:
        if self.buffer:
            self.put(bytes(self.buffer))
            self.buffer.clear()

    def put(self, chunk: bytes | BaseException | None) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(queue.Full):
                self.chunks.put(chunk, timeout=0.1)
                return
        raise _Stopped


class _Stopped(Exception):
    """The reader of a part went away."""


@dataclass(frozen=True)
class _Part:
    """Which entries of a kept archive a part holds, and how they are named in it."""

    prefix: tuple[str, ...]
    git_names: bool

    def name(self, stored: str) -> str | None:
        """The name of the entry kept as ``stored`` in the part (None: not in it)."""
        names = tuple(split_path(stored))
        if names[: len(self.prefix)] != self.prefix or len(names) == len(self.prefix):
            return None
        inside = names[len(self.prefix) :]
        return "/".join(map(unescape_git, inside) if self.git_names else inside)


def _write_part(
    handle: BinaryIO,
    part_of: _Part,
    chunks: _Chunks,
    stop: threading.Event,
) -> None:
    sink = _Sink(chunks, stop)
    try:
        handle.seek(0)
        with (
            tarfile.open(fileobj=handle, mode="r|") as archive,
            tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as part,  # type: ignore[call-overload]
        ):
            for member in archive:
                archive.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
                name = part_of.name(member.name)
                if name is None:
                    continue
                info = _renamed(member, name)
                part.addfile(info, archive.extractfile(member) if member.isfile() else None)
        sink.flush_all()
        sink.put(None)
    except _Stopped:
        return
    except BaseException as exc:  # handed to the reader, which raises it
        with contextlib.suppress(_Stopped):
            sink.put(exc)


def _renamed(member: tarfile.TarInfo, name: str) -> tarfile.TarInfo:
    """A new header for ``member`` named ``name`` (never its old pax ``path``, which a long
    name is written in and which would win over the new one)."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = member.type, member.mode, member.mtime
    info.size, info.linkname = member.size, member.linkname
    return info
