"""Kept trees: a snapshot of the process backend kept also unpacked on the host, so that a
box starts from it by a native copy instead of the snapshot's tar streamed through its
supervisor and unpacked entry by entry (seconds for a venv's thousands of files).

The tree is written only by golem, from the snapshot's own archive (golem's, every entry
checked by ``golem.sandbox.keep``: no hard link, device, FIFO, setuid bit or link beneath a
link), unpacked with tarfile's ``tar`` filter into a hidden directory and renamed into
place whole: ``trees/<sha256>/`` beside ``objects/<sha256>.tar`` in the tenant's directory.
Its symbolic links are not links on the host but data (``LINKS``), as in the archive.
A box from the snapshot gets it bound read-only at ``TREE_MOUNT`` (a bind no process of the
box can remount: its capabilities are dropped and it can make no user namespace), owned by
root when golem runs as root (boxes then run as ``run_as``), and copies it into its own
tmpfs with ``cp -a``, its Python making the links after: its writes land in its own
trees, bounded by their sizes, never in the kept tree nor another box's. Such a box is
never pooled (the next session of its shape would see the mount). The tree goes with the
snapshot's archive when no name points at it any more, and counts in the snapshot bounds
as its archive's size again (an upper bound: the files without their headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tarfile
import time
from pathlib import Path

from golem.core.errors import SandboxError, SnapshotNotFound, UnsafeBoxOutput
from golem.core.ids import new_id
from golem.sandbox.contracts import Box, Mount

__all__ = ["TREE_BACKENDS", "TREE_MOUNT", "copy_in", "drop_tree", "kept_tree", "tree_mount"]

TREE_BACKENDS = ("process",)
TREE_MOUNT = "/run/golem-snapshot"
COPIERS = ("bin/sh", "bin/cp", "bin/chmod", "bin/stat")
LINKS = ".golem-links"
"""The kept tree's symbolic links: NUL-separated pairs of a target and its path."""

# Copies each kept root into the box's own directory of that name, keeping that
# directory's own mode (a tmpfs's 1777 /tmp), then has the box's Python (the supervisor's
# interpreter) make the links, all in one process: everything arrives as positional
# arguments or NUL-separated data, nothing is spliced into a script.
_COPY_IN = (
    'python="$1"; linker="$2"; src="$3"; shift 3; for root; do '
    'mode=$(stat -c %a "/$root") || exit 1; cp -a "$src/$root/." "/$root/" || exit 1; '
    'chmod "$mode" "/$root" || exit 1; done; '
    f'exec "$python" -I -S -c "$linker" "$src/{LINKS}"'
)
_LINKER = (
    "import os, sys\n"
    "parts = open(sys.argv[1], 'rb').read().split(b'\\0')[:-1]\n"
    "for target, path in zip(parts[::2], parts[1::2]):\n"
    "    os.symlink(target, b'/' + path)\n"
)


def kept_tree(tenant_dir: Path, archive: Path, digest: str) -> Path:
    """The snapshot's tree beneath ``tenant_dir``, unpacked from its ``archive`` first when
    it is not kept yet (a snapshot taken before trees were kept, or another backend's)."""
    trees = tenant_dir / "trees"
    tree = trees / digest
    if tree.is_dir():
        return tree
    trees.mkdir(mode=0o711, parents=True, exist_ok=True)
    incoming = trees / f".incoming-{new_id('tree')}"
    try:
        incoming.mkdir(mode=0o755)
        try:
            _unpack(archive, incoming)
        except FileNotFoundError as exc:
            if exc.filename is not None and Path(exc.filename) != archive:
                raise _unpackable(exc) from exc
            raise SnapshotNotFound(
                f"snapshot {digest[:12]} was pruned before its box started; take it again"
            ) from None
        except (OSError, tarfile.TarError, UnicodeError) as exc:
            raise _unpackable(exc) from exc
        os.chmod(incoming, 0o755)  # noqa: S103 - boxes' host user reads it, bound read-only
        try:
            incoming.rename(tree)
        except OSError:  # another process kept it meanwhile: the same content
            if not tree.is_dir():
                raise
    finally:
        if incoming.exists():
            shutil.rmtree(incoming, ignore_errors=True)
    return tree


def _unpack(archive: Path, into: Path) -> None:
    """Files and directories of ``archive`` beneath ``into``; its symbolic links only as
    data in ``LINKS`` (the host holds no link a box made), for the box to make."""
    links = bytearray()
    with tarfile.open(archive, mode="r:") as tar:
        for member in tar:
            if member.issym():
                links += os.fsencode(member.linkname) + b"\0" + os.fsencode(member.name) + b"\0"
            else:
                tar.extract(member, into, filter="tar", numeric_owner=True)
            tar.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
    (into / LINKS).write_bytes(bytes(links))


def _unpackable(exc: BaseException) -> UnsafeBoxOutput:
    """A snapshot whose checked archive still cannot be laid out as a tree (a file and a
    directory of one name, a path under a file): refused as any unsafe box output."""
    where = str(getattr(exc, "filename", "") or "")
    return UnsafeBoxOutput(
        where, f"the snapshot cannot be kept as a tree ({type(exc).__name__})", "snapshot.tree"
    )


GONE_GRACE = 600.0
"""Seconds a dropped tree stays on disk under a hidden name: a box that bound it a moment
before (its bind shows the same directory) copies it whole before it is deleted."""


def drop_tree(tenant_dir: Path, digest: str, *, now: float | None = None) -> None:
    """Take a snapshot's kept tree off its name at once (no new box binds it); delete it,
    and any dropped longer than ``GONE_GRACE`` ago, once no box can still be copying it."""
    trees = tenant_dir / "trees"
    tree = trees / digest
    if tree.is_dir():
        gone = trees / f".gone-{new_id('tree')}"
        with contextlib.suppress(FileNotFoundError):
            tree.rename(gone)
            os.utime(gone)  # the grace counts from the drop
    moment = time.time() if now is None else now
    for dropped in trees.glob(".gone-*"):
        with contextlib.suppress(FileNotFoundError):
            if moment - dropped.lstat().st_mtime > GONE_GRACE:
                shutil.rmtree(dropped, ignore_errors=True)


def tree_mount(tree: Path) -> Mount:
    """The read-only bind that shows a box the kept tree."""
    return Mount(source=tree, target=TREE_MOUNT)


def copies_natively(image: str | None) -> bool:
    """Whether a box of ``image`` (None: the host's system) has the programs ``copy_in``
    runs."""
    root = Path(image) if image is not None else Path("/")
    return all(os.path.lexists(root / program) for program in COPIERS)


async def copy_in(box: Box, roots: list[str], python: str) -> None:
    """Copy the kept tree bound in ``box`` into its own ``roots`` (a native copy, in the
    box, as the box's user), its links made by the box's ``python``."""
    if not roots:
        return
    argv = ["/bin/sh", "-c", _COPY_IN, "golem-copy-in", python, _LINKER, TREE_MOUNT, *roots]
    result = await box.execute(argv)
    if result.exit_code != 0:
        raise SandboxError(
            "the box could not copy its snapshot in "
            f"({result.stderr_text.strip()[-300:] or result.exit_code}); take the snapshot "
            "again, or check the box's /tmp and /workspace sizes"
        )


async def kept_tree_async(tenant_dir: Path, archive: Path, digest: str) -> Path:
    """``kept_tree`` in a worker thread."""
    return await asyncio.to_thread(kept_tree, tenant_dir, archive, digest)
