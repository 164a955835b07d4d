"""What the host takes back from a box: data, checked entry by entry and as a whole, then
landed beneath one host directory whole or not at all. This module is the only way anything
a box wrote reaches the host's disk.

A box hands back a tar stream (a directory, or the paths a run changed). The host spools it
(capped; runs of zeros as holes) and reads it with tarfile in random-access mode behind a
reader that refuses any one read over a megabyte, so no header can make it hold a large
buffer. Every entry is checked against the rules below and placed in a ``TreePlan`` (the
destination as the transfer would leave it); then the plan as a whole is checked (where
every link would lead, which directories git would take for a repository); only then is
anything written, by ``golem.sandbox.landing`` (files staged first, then renamed into
place through ``O_NOFOLLOW`` walks; any failure undoes what was changed). A refusal stops
the transfer with ``UnsafeBoxOutput``, which names the rule, and leaves the destination as
it was:

- ``takeback.path``: relative paths of plain names only (no absolute path, no ``..``), and,
  where the host asked for certain paths, only those; none whose path on the host would
  pass PATH_MAX.
- ``takeback.git``: no name ``.git`` anywhere (any case, trailing dots or spaces, ``GIT~1``):
  the host's git metadata, a nested repository or a submodule never come from a box; and
  no directory git would take for a repository's own.
- ``takeback.kind``: regular files, directories and symlinks only: no hard link, device,
  FIFO or socket.
- ``takeback.link``: a symlink points inside the tree by a relative path, never into .git.
- ``takeback.mode``: no setuid, setgid or sticky bit; files land 0644 or 0755.
- ``takeback.size``: no file over the box's ``max_file_bytes``, no transfer over its
  ``max_takeback_bytes``, neither over what the box could hold (a sparse file's size counts
  whole), at most ``MAX_ENTRIES`` entries; the zeros of what lands are holes.
- ``takeback.host-link``: nothing is written through a symlink already on the host.

Nothing a program in the box says about itself (a mode, a size, which paths changed)
decides more than what lands, within these rules.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
import threading
from collections.abc import AsyncIterable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.sandbox.hosttree import HostTree, check_name, split_path
from golem.sandbox.landing import Landing, in_thread
from golem.sandbox.limits import MAX_ENTRIES, TakebackLimits, box_holds_at_most
from golem.sandbox.tarspool import ArchiveData, archive_members, opened_archive, spooled
from golem.sandbox.treecheck import check_plan
from golem.sandbox.treeplan import Planned, TreePlan

__all__ = [
    "MAX_ENTRIES",
    "Landed",
    "TakebackLimits",
    "box_holds_at_most",
    "land_archive",
    "landed_mode",
]

SPECIAL_BITS = 0o7000


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
    rules above, whole or not at all. ``wanted`` says which (normalised, relative) paths the
    host asked for; ``skip_git`` drops the ``.git`` of these directories instead of refusing
    it (the repositories the host's tree holds: "" for its root, submodules, nested clones);
    a symlink equal to one of ``known_links`` (path -> target: the host's own, copied into
    the box) is left out rather than checked: it is no change; ``remove_missing`` are paths
    to remove from the destination unless the archive held them (what the box no longer
    has). A transfer cancelled while it lands is undone before the cancellation goes on."""
    destination.mkdir(parents=True, exist_ok=True)
    async with spooled(chunks, limits, _spool_dir(destination)) as spool:
        unpacker = _Unpacker(destination, limits, wanted, frozenset(skip_git), known_links or {})
        return await in_thread(lambda stop: unpacker.run(spool, remove_missing, stop))


def _spool_dir(destination: Path) -> str | None:
    """Where to spool: beside the destination (on its disk, not a /tmp that may be held in
    memory), else the system's temporary directory."""
    parent = destination.parent
    return str(parent) if os.access(parent, os.W_OK | os.X_OK) else None


class _Unpacker:
    """One archive: its entries checked and planned in order, the plan checked, then
    landed."""

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

    def run(self, spool: IO[bytes], remove_missing: Sequence[str], stop: threading.Event) -> Landed:
        spool_size = os.fstat(spool.fileno()).st_size
        with opened_archive(spool) as archive, HostTree(self.destination) as tree:
            plan = TreePlan(tree)
            seen: dict[str, None] = {}  # each path once, in order
            for count, member in enumerate(archive_members(archive), 1):
                archive.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
                path = self._checked_path(member.name)
                self._count(count, path if path is not None and path not in seen else "")
                if path is None:
                    continue
                if not (member.issym() and self.known_links.get(path) == member.linkname):
                    plan.place(path, self._planned(member, path, spool, spool_size))
                seen[path] = None  # a known link the box still has is held, not missing
            for path in remove_missing:
                if path not in seen:
                    plan.remove(path)
            check_plan(plan, seen)
            Landing(tree, plan, stop).run()
        return Landed(list(seen))

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
            raise UnsafeBoxOutput(path, "golem did not ask the box for this path", "takeback.path")
        return path

    def _planned(
        self, member: tarfile.TarInfo, path: str, spool: IO[bytes], spool_size: int
    ) -> Planned:
        """What the entry will make, if every rule of an entry lets it."""
        if member.isdir():
            return Planned("dir")  # 0755 whatever the box's mode was
        if member.issym():
            return Planned("link", target=checked_link(path, member.linkname))
        if member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and member.sparse is None:
            if member.size < 0:
                raise UnsafeBoxOutput(path, "a negative size", "takeback.kind")
            mode = landed_mode(member.mode, path)
            if member.size > self.limits.max_file_bytes:
                raise self.limits.file_too_large(path, member.size)
            self.total += member.size
            if self.total > self.limits.max_bytes:
                raise UnsafeBoxOutput(
                    path, f"the transfer passed {self.limits.transfer_limit()}", "takeback.size"
                )
            offset, size = member.offset_data, member.size
            if offset + size > spool_size:
                raise UnsafeBoxOutput(
                    path, "a broken tar entry (its data is cut short)", "takeback.kind"
                )
            return Planned(
                "file", mode=mode, size=size, source=lambda: ArchiveData(spool, offset, size)
            )
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
