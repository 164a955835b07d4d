"""What the host takes back from a box: data, checked entry by entry, landed beneath one
host directory. This module is the only way anything a box wrote reaches the host's disk.

A box hands back a tar stream (a directory, or the paths a run changed). The host spools it
(capped) and reads it with tarfile in random-access mode behind a reader that refuses any
one read over a megabyte, so no header can make it hold a large buffer; then every entry is
checked against the rules below and written through ``HostTree`` (``O_NOFOLLOW`` at every
step, files renamed into place). A refusal stops the transfer with ``UnsafeBoxOutput``,
which names the rule:

- ``takeback.path``: relative paths of plain names only (no absolute path, no ``..``), and,
  where the host asked for certain paths, only those.
- ``takeback.git``: no name ``.git`` anywhere (any case, trailing dots or spaces, ``GIT~1``):
  the host's git metadata, a nested repository or a submodule never come from a box.
- ``takeback.kind``: regular files, directories and symlinks only: no hard link, device,
  FIFO or socket.
- ``takeback.link``: a symlink points inside the tree by a relative path, never into .git.
- ``takeback.mode``: no setuid, setgid or sticky bit; files land 0644 or 0755.
- ``takeback.size``: no file over the box's ``max_file_bytes``, no transfer over its
  ``max_takeback_bytes``, at most ``MAX_ENTRIES`` entries.
- ``takeback.host-link``: nothing is written through a symlink already on the host.

Nothing a program in the box says about itself (a mode, a size, which paths changed)
decides more than what lands, within these rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import tarfile
import tempfile
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Collection,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.core.spec import BoxSpec
from golem.sandbox.hosttree import HostTree, check_name, split_path
from golem.sandbox.tarscan import HeaderScan
from golem.sandbox.treecheck import check_git_dirs, check_links, escaping_links

__all__ = ["MAX_ENTRIES", "Landed", "TakebackLimits", "land_archive", "landed_mode"]

MAX_ENTRIES = 200_000
MAX_NAME_BYTES = 64 * 1024 * 1024  # the distinct names of one transfer (each is kept)
MAX_READ = 1024 * 1024  # the largest single read tarfile may make (a pax or long-name header)
ARCHIVE_SLACK = 64 * 1024 * 1024  # tar headers and padding beyond the data itself
SPECIAL_BITS = 0o7000
BROKEN = (tarfile.TarError, UnicodeError, ValueError, IndexError, RecursionError, EOFError)
"""What tarfile raises on an archive it cannot read (a box may send any bytes)."""


@dataclass(frozen=True)
class TakebackLimits:
    """How much the host takes back from one box."""

    max_file_bytes: int
    max_bytes: int
    max_entries: int = MAX_ENTRIES
    max_name_bytes: int = MAX_NAME_BYTES

    @classmethod
    def of(cls, spec: BoxSpec) -> TakebackLimits:
        """The limits a box's spec sets."""
        return cls(spec.max_file_bytes, spec.max_takeback_bytes)

    def file_too_large(self, path: str, size: int) -> UnsafeBoxOutput:
        """The refusal of a file the box says has ``size`` bytes."""
        return UnsafeBoxOutput(
            path,
            f"the box announced {format_size(size)}, over its max_file_bytes "
            f"({format_size(self.max_file_bytes)})",
            "takeback.size",
        )


@dataclass
class Landed:
    """What a transfer wrote: paths of files, links and directories, as the box named
    them (normalised, relative)."""

    paths: list[str] = field(default_factory=list)


def landed_mode(mode: int, path: str) -> int:
    """The mode a file lands with: 0755 when any execute bit is set, else 0644; a setuid,
    setgid or sticky bit is refused."""
    if mode & SPECIAL_BITS:
        raise UnsafeBoxOutput(
            path,
            f"mode {mode & 0o7777:04o} has a setuid, setgid or sticky bit; files land as "
            "0644 or 0755 only",
            "takeback.mode",
        )
    return 0o755 if mode & 0o111 else 0o644


async def land_archive(
    chunks: AsyncIterable[bytes],
    destination: Path,
    limits: TakebackLimits,
    *,
    wanted: Callable[[str], bool] | None = None,
    skip_git: Collection[str] = (),
    known_links: Mapping[str, str] | None = None,
    remove_missing: Sequence[str] = (),
) -> Landed:
    """Unpack a tar stream from a box beneath ``destination`` (made if missing) by the
    rules above. ``wanted`` says which (normalised, relative) paths the host asked for;
    ``skip_git`` drops the ``.git`` of these directories instead of refusing it (the
    repositories the host's tree holds: "" for its root, submodules, nested clones); a
    symlink equal to one of ``known_links`` (path -> target: the host's own, copied into
    the box) is left out rather than checked: it is no change;
    ``remove_missing`` are paths to remove from the destination unless the archive held
    them (what the box no longer has). Then the tree as a whole is checked: no link in it
    leads out or into .git, no directory the transfer touched is a git directory."""
    destination.mkdir(parents=True, exist_ok=True)
    async with spooled(chunks, limits, _spool_dir(destination)) as spool:
        unpacker = _Unpacker(destination, limits, wanted, frozenset(skip_git), known_links or {})
        return await asyncio.to_thread(unpacker.run, spool, remove_missing)


@contextlib.asynccontextmanager
async def spooled(
    chunks: AsyncIterable[bytes], limits: TakebackLimits, directory: str | None
) -> AsyncIterator[IO[bytes]]:
    """A tar stream from a box in a temporary file in ``directory``, rewound: refused past
    ``limits.max_bytes`` (and its headers checked, ``HeaderScan``) as it comes."""
    cap = limits.max_bytes + ARCHIVE_SLACK
    with tempfile.TemporaryFile(prefix=".golem-spool-", dir=directory) as spool:
        size = 0
        scan = HeaderScan(limits.max_file_bytes)

        def take(chunk: bytes) -> None:  # on a worker thread: the scan never blocks the loop
            scan.feed(chunk)
            spool.write(chunk)

        async for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise UnsafeBoxOutput(
                    "(the archive)",
                    f"the box sent more than {format_size(cap)}, over its "
                    f"max_takeback_bytes ({format_size(limits.max_bytes)})",
                    "takeback.size",
                )
            await asyncio.to_thread(take, chunk)
        spool.seek(0)
        yield spool


def _spool_dir(destination: Path) -> str | None:
    """Where to spool: beside the destination (on its disk, not a /tmp that may be held in
    memory), else the system's temporary directory."""
    parent = destination.parent
    return str(parent) if os.access(parent, os.W_OK | os.X_OK) else None


class _CappedReader:
    """A seekable file for tarfile that refuses a read larger than ``MAX_READ``."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner

    def read(self, size: int = -1) -> bytes:
        if size < 0 or size > MAX_READ:
            raise UnsafeBoxOutput(
                "(the archive)",
                "a tar header asks for more than a megabyte at once",
                "takeback.size",
            )
        return self._inner.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._inner.seek(offset, whence)

    def tell(self) -> int:
        return self._inner.tell()


class _Unpacker:
    """One archive's entries, checked and landed in order."""

    def __init__(
        self,
        destination: Path,
        limits: TakebackLimits,
        wanted: Callable[[str], bool] | None,
        skip_git: frozenset[str],
        known_links: Mapping[str, str],
    ) -> None:
        self.destination = destination
        self.limits = limits
        self.wanted = wanted
        self.skip_git = skip_git
        self.known_links = known_links
        self.total = 0
        self.name_bytes = 0
        self.links_before: set[tuple[str, str]] = set()

    def run(self, spool: IO[bytes], remove_missing: Sequence[str]) -> Landed:
        landed = Landed()
        with opened_archive(spool) as archive, HostTree(self.destination) as tree:
            tree.before_links_change = self._note_links
            seen: dict[str, None] = {}  # each path once, in order
            for count, member in enumerate(archive_members(archive), 1):
                archive.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
                path = self._checked_path(member.name)
                self._count(count, path if path is not None and path not in seen else "")
                if path is None:
                    continue
                if not (member.issym() and self.known_links.get(path) == member.linkname):
                    self._land(archive, member, path, tree)
                seen[path] = None  # a known link the box still has is held, not missing
            for path in remove_missing:
                if path not in seen:
                    tree.remove(path)
            landed.paths = list(seen)
            if tree.links_changed:
                check_links(tree, self.links_before)
            check_git_dirs(tree, landed.paths)
        return landed

    def _note_links(self) -> None:
        self.links_before = escaping_links(self.destination)

    def _count(self, count: int, new_name: str) -> None:
        """Count an entry, and the bytes of its name when the name is new."""
        self.name_bytes += len(new_name.encode("utf-8", "surrogateescape"))
        if count > self.limits.max_entries or self.name_bytes > self.limits.max_name_bytes:
            raise UnsafeBoxOutput(
                new_name or "(the archive)",
                f"the box sent more than {self.limits.max_entries} entries or "
                f"{format_size(self.limits.max_name_bytes)} of names",
                "takeback.size",
            )

    def _checked_path(self, name: str) -> str | None:
        """The entry's normalised path; None for one that is skipped (the root itself, the
        .git of a directory in ``skip_git``)."""
        if self.skip_git:
            raw = [part for part in name.split("/") if part not in ("", ".")]
            for index, part in enumerate(raw):
                if part == ".git" and "/".join(raw[:index]) in self.skip_git:
                    return None
        names = split_path(name)
        if not names:
            return None
        path = "/".join(names)
        if self.wanted is not None and not self.wanted(path):
            raise UnsafeBoxOutput(path, "golem did not ask the box for this path",
                                  "takeback.path")  # fmt: skip
        return path

    def _land(self, archive: tarfile.TarFile, member: tarfile.TarInfo, path: str,
              tree: HostTree) -> None:  # fmt: skip
        try:
            self._write(archive, member, path, tree)
        except OSError as exc:  # a name the file system refuses, a full disk
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            raise UnsafeBoxOutput(
                path,
                f"the host could not write it ({exc.strerror})",
                "takeback.size" if full else "takeback.path",
            ) from None

    def _write(self, archive: tarfile.TarFile, member: tarfile.TarInfo, path: str,
               tree: HostTree) -> None:  # fmt: skip
        if member.isdir():
            tree.make_dir(path)  # 0755 whatever the box's mode was
        elif member.issym():
            tree.make_link(path, checked_link(path, member.linkname))
        elif member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and member.sparse is None:
            if member.size < 0:
                raise UnsafeBoxOutput(path, "a negative size", "takeback.kind")
            mode = landed_mode(member.mode, path)
            if member.size > self.limits.max_file_bytes:
                raise self.limits.file_too_large(path, member.size)
            self.total += member.size
            if self.total > self.limits.max_bytes:
                raise UnsafeBoxOutput(
                    path,
                    f"the transfer passed the box's max_takeback_bytes "
                    f"({format_size(self.limits.max_bytes)})",
                    "takeback.size",
                )
            source = archive.extractfile(member)
            assert source is not None  # a regular file always has a reader
            try:
                with source:
                    tree.write_file(path, source, member.size, mode)
            except (tarfile.TarError, EOFError, ValueError) as exc:
                raise UnsafeBoxOutput(path, f"a broken tar entry ({exc})",
                                      "takeback.kind") from None  # fmt: skip
        else:
            raise UnsafeBoxOutput(
                path,
                f"it is {_KINDS.get(member.type, 'a special file')}; only regular files, "
                "directories and symlinks cross from a box",
                "takeback.kind",
            )


_KINDS = {
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}


@contextlib.contextmanager
def opened_archive(spool: IO[bytes]) -> Iterator[tarfile.TarFile]:
    """The spooled archive, read through ``_CappedReader``."""
    try:
        archive = tarfile.TarFile(fileobj=_CappedReader(spool), mode="r")  # type: ignore[arg-type]
    except BROKEN as exc:
        raise UnsafeBoxOutput("(the archive)", f"not a tar archive ({exc})",
                              "takeback.kind") from None  # fmt: skip
    with archive:
        yield archive


def archive_members(archive: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The archive's entries, its format errors translated."""
    while True:
        try:
            member = archive.next()
        except BROKEN as exc:
            raise UnsafeBoxOutput("(the archive)", f"a broken tar entry ({exc})",
                                  "takeback.kind") from None  # fmt: skip
        if member is None:
            return
        yield member


def checked_link(path: str, target: str) -> str:
    """``target`` of the symlink at ``path``, if it is relative and, read from where the
    link is, stays inside the tree and out of any ``.git``."""
    if not target or "\0" in target or target.startswith("/") or len(target) > 4096:
        raise UnsafeBoxOutput(
            path, f"a symlink to {target!r}: links must be relative", "takeback.link"
        )
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeBoxOutput(
            path, f"a symlink to {target!r} leads outside the tree", "takeback.link"
        )
    for name in [*target.split("/"), *resolved.split("/")]:
        if name not in ("", ".", ".."):
            try:
                check_name(name, path)
            except UnsafeBoxOutput:
                raise UnsafeBoxOutput(
                    path, f"a symlink to {target!r} leads into .git", "takeback.link"
                ) from None
    return target
