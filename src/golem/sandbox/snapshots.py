"""Snapshots of a box: its writable state frozen under a name, per tenant and content-
addressed, for new boxes to start from (``BoxSpec.snapshot``).

A box's writable state is what the pool's wipe empties: ``/workspace``, ``/tmp`` (golem's
home, the venv and tool caches in ``/tmp/golem``) and ``/dev/shm``, all tmpfs of the box's
own on the backends that snapshot. Taking a snapshot is a takeback that is never unpacked:
the box's supervisor streams those trees as one tar, and ``golem.sandbox.keep`` checks it
entry by entry (no link beneath a link, nothing into ``.git``, no device, FIFO or hard link,
no setuid, setgid or sticky bit, files 0644 or 0755, sizes within the box's takeback caps
and what the box could hold) and writes a new archive of golem's own. That archive is the
snapshot's content: kept read-only as ``objects/<sha256>.tar`` beneath the tenant's
directory of ``<state_dir>/snapshots`` (the directory named by a hash of the tenant, never
by the tenant's text), a name pointing at it from ``names/<name>.json``. Two names with the
same content share one object.

A box started from a snapshot gets a copy: its own supervisor unpacks each tree's part into
the box's own tmpfs (the dependency cache's way), so its writes never reach the snapshot,
another box started from it, or the box it was taken from, and the tmpfs sizes bound it.

A snapshot belongs to the tenant of the box it was taken from (the ``golem.tenant`` label
the server puts on every session's box; ``default`` on this machine) and is found only by
that tenant: a name or digest of another tenant's is ``SnapshotNotFound``, as one that does
not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import shutil
import tarfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from golem.core.errors import (
    InvalidRequest,
    PolicyViolation,
    SnapshotNotFound,
    SnapshotUnsupported,
)
from golem.core.ids import new_id
from golem.core.sizes import format_size
from golem.core.spec import SNAPSHOT_NAME, BoxSpec
from golem.sandbox.contracts import Box
from golem.sandbox.keep import archive_part, keep_archive
from golem.sandbox.kept_trees import TREE_BACKENDS, drop_tree, kept_tree_async
from golem.sandbox.models import SnapshotInfo
from golem.sandbox.pool import WIPED_PATHS

__all__ = [
    "DEFAULT_TENANT",
    "SNAPSHOT_BACKENDS",
    "TENANT_LABEL",
    "SnapshotInfo",
    "SnapshotStore",
    "check_snapshottable",
    "tenant_of",
]

TENANT_LABEL = "golem.tenant"
DEFAULT_TENANT = "default"
SNAPSHOT_BACKENDS = ("process", "docker", "gvisor", "microvm")
"""Backends whose boxes keep every write in the trees their supervisor archives (the
docker backend on Podman too): the root is read-only, /workspace, /tmp and /dev/shm their
own. Memory is not kept on any (a runsc checkpoint or a QEMU memory snapshot would)."""
ROOTS = tuple(path.lstrip("/") for path in WIPED_PATHS)
STALE_SECONDS = 86400.0
"""Age past which a half-written archive or name is a dead process's (no snapshot takes a
day to write)."""
DIGEST = re.compile(r"^[0-9a-f]{64}$")
CHUNK = 1024 * 1024


def tenant_of(spec: BoxSpec) -> str:
    """The tenant a box belongs to: the server's ``golem.tenant`` label, else ``default``."""
    return spec.labels.get(TENANT_LABEL) or DEFAULT_TENANT


def check_snapshottable(backend: str, spec: BoxSpec) -> None:
    """SnapshotUnsupported, naming what can, unless a box of ``backend`` and ``spec``
    keeps all its writes in the trees a snapshot holds."""
    if backend not in SNAPSHOT_BACKENDS:
        raise SnapshotUnsupported(
            f"the {backend} backend has no snapshots yet; boxes of the "
            f"{', '.join(SNAPSHOT_BACKENDS[:-1])} and {SNAPSHOT_BACKENDS[-1]} backends have "
            "(choose one with --backend or the box's tier)"
        )
    if spec.containers:
        raise SnapshotUnsupported(
            "a box with containers has no snapshot: its engine's images and containers are "
            "on a disk of their own, not in /workspace, /tmp or /dev/shm; snapshot a box "
            "without containers"
        )
    if spec.workspace is not None:
        raise SnapshotUnsupported(
            "a box whose /workspace is a host directory has no snapshot: that state is the "
            "host's; use a box with its own /workspace (no `workspace`)"
        )
    if not spec.read_only_root:
        raise SnapshotUnsupported(
            "a box with a writable root has no snapshot yet (only /workspace, /tmp and "
            "/dev/shm are kept); keep read_only_root = true"
        )


def _checked_name(name: str) -> str:
    if not re.fullmatch(SNAPSHOT_NAME, name):
        raise InvalidRequest(
            f"snapshot name {name[:80]!r}: use lower-case letters, digits, '.', '_' and '-' "
            "(at most 63, starting with a letter or digit)"
        )
    return name


class SnapshotStore:
    """The snapshots kept in a state directory, every tenant's."""

    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "snapshots"

    def _tenant_dir(self, tenant: str) -> Path:
        return self.root / hashlib.sha256(tenant.encode()).hexdigest()[:32]

    def _private(self, tenant: str, part: str) -> Path:
        """``part`` (objects, names) of ``tenant``'s directory, made readable by golem
        alone; the directories above it only traversable (a kept tree's box user reaches
        ``trees/`` through them, and lists nothing)."""
        directory = self._tenant_dir(tenant) / part
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory.chmod(0o700)  # one made before this rule
        for above in (directory.parent, self.root):
            above.chmod(0o711)
        return directory

    async def take(
        self, box: Box, name: str, *, backend: str, max_tenant_bytes: int | None = None
    ) -> SnapshotInfo:
        """Freeze ``box``'s writable state as ``name`` of its tenant (replacing a snapshot
        of that name); UnsafeBoxOutput, keeping nothing, when the box's trees break a rule.
        With ``max_tenant_bytes``, the tenant's oldest other snapshots are removed until
        all fit in it; one that alone does not is refused (PolicyViolation), the name kept
        as it was."""
        _checked_name(name)
        check_snapshottable(backend, box.spec)
        tenant = tenant_of(box.spec)
        objects = self._private(tenant, "objects")
        incoming = objects / f".incoming-{new_id('snap')}.tar"
        try:
            kept = await keep_archive(
                box.stream_archive("/", paths=list(ROOTS)), incoming, box.limits, within=ROOTS
            )
            digest, filled = await asyncio.to_thread(_read_kept, incoming, kept.found)
            stored = objects / f"{digest}.tar"
            if stored.exists():
                incoming.unlink()  # the same content is kept already
            else:
                incoming.chmod(0o400)
                incoming.replace(stored)
            if backend in TREE_BACKENDS:
                try:
                    await kept_tree_async(self._tenant_dir(tenant), stored, digest)
                except BaseException:
                    self._drop_unreferenced(tenant, digest)  # no archive kept without a name
                    raise
        finally:
            incoming.unlink(missing_ok=True)
        info = SnapshotInfo(
            name=name,
            tenant=tenant,
            digest=digest,
            size=kept.size,
            entries=kept.entries,
            created=time.time(),
            backend=backend,
            image=box.spec.image,
            roots=filled,
            box_id=box.id,
        )
        try:
            evicted = self._room_for(info, max_tenant_bytes)
        except PolicyViolation:
            self._drop_unreferenced(tenant, digest)
            raise
        previous = [other for other in self._tenant_snapshots(tenant) if other.name == name]
        self._write_name(tenant, info)
        for old in previous:
            self._drop_unreferenced(tenant, old.digest)
        for old in evicted:
            self.remove(old)
        return info

    def _room_for(self, info: SnapshotInfo, max_tenant_bytes: int | None) -> list[SnapshotInfo]:
        """The tenant's oldest other snapshots to remove for ``info`` to fit in
        ``max_tenant_bytes``; PolicyViolation when it alone does not."""
        if max_tenant_bytes is None:
            return []
        if info.size > max_tenant_bytes:
            raise PolicyViolation(
                f"snapshot {info.name!r} holds {format_size(info.size)}, more than the "
                f"{format_size(max_tenant_bytes)} this tenant's snapshots may take in all "
                "(server.policies.<role>.max_snapshot_bytes); nothing was kept and the name "
                "is as it was: keep less in the box's /workspace, /tmp and /dev/shm"
            )
        others = [other for other in self._tenant_snapshots(info.tenant) if other.name != info.name]
        others.sort(key=lambda other: other.created)
        evicted: list[SnapshotInfo] = []
        while others and _stored_bytes([*others, info]) > max_tenant_bytes:
            evicted.append(others.pop(0))
        return evicted

    def _drop_unreferenced(self, tenant: str, digest: str) -> None:
        """Remove the archive ``digest`` of ``tenant`` unless a name still points at it."""
        if all(other.digest != digest for other in self._tenant_snapshots(tenant)):
            (self._tenant_dir(tenant) / "objects" / f"{digest}.tar").unlink(missing_ok=True)
            drop_tree(self._tenant_dir(tenant), digest)

    def _write_name(self, tenant: str, info: SnapshotInfo) -> None:
        names = self._private(tenant, "names")
        partial = names / f".{info.name}.{new_id('tmp')}"
        partial.write_text(info.model_dump_json())
        partial.replace(names / f"{info.name}.json")

    def named(self, spec: BoxSpec, name: str) -> SnapshotInfo | None:
        """The snapshot ``name`` of ``spec``'s tenant, if there is one."""
        found = [info for info in self._tenant_snapshots(tenant_of(spec)) if info.name == name]
        return found[0] if found else None

    def resolve(self, spec: BoxSpec, *, backend: str) -> SnapshotInfo:
        """The snapshot ``spec.snapshot`` names among its tenant's, checked to fit a box of
        ``backend`` and ``spec``."""
        assert spec.snapshot is not None
        check_snapshottable(backend, spec)
        tenant = tenant_of(spec)
        found = [
            info
            for info in self._tenant_snapshots(tenant)
            if spec.snapshot in (info.name, f"sha256:{info.digest}")
        ]
        if not found:
            raise SnapshotNotFound(
                f"tenant {tenant!r} has no snapshot {spec.snapshot!r}; see `golem snapshots "
                "ls`, or take one of a box first"
            )
        info = found[0]
        if info.backend != backend or info.image != spec.image:
            raise SnapshotUnsupported(
                f"snapshot {spec.snapshot!r} was taken on the {info.backend} backend from "
                f"image {info.image or 'the default'}; start its boxes there (its installed "
                "programs were built for that image)"
            )
        return info

    def open(self, info: SnapshotInfo) -> BinaryIO:
        """The snapshot's archive, opened (readable even if it is pruned meanwhile)."""
        try:
            return (self._tenant_dir(info.tenant) / "objects" / f"{info.digest}.tar").open("rb")
        except FileNotFoundError:
            raise SnapshotNotFound(
                f"snapshot {info.name!r} was removed (pruned) before its box started; take it again"
            ) from None

    async def tree(self, info: SnapshotInfo) -> Path:
        """The snapshot's kept tree (``golem.sandbox.kept_trees``), unpacked from its
        archive first when it is not kept yet."""
        tenant_dir = self._tenant_dir(info.tenant)
        archive = tenant_dir / "objects" / f"{info.digest}.tar"
        return await kept_tree_async(tenant_dir, archive, info.digest)

    async def restore(self, box: Box, info: SnapshotInfo) -> None:
        """Unpack the snapshot into ``box``: each tree's part into the box's own tmpfs."""
        with self.open(info) as archive:
            await _unpack(box, archive, info.roots)

    @contextlib.asynccontextmanager
    async def held(self, box: Box, *, backend: str) -> AsyncIterator[Held]:
        """``box``'s writable state checked as a snapshot is, kept only while the block
        runs (a fork's copy: no name, no tenant's bytes); UnsafeBoxOutput, keeping
        nothing, when the box's trees break a rule. A nested repository's ``.git`` (a
        submodule's, a vendored one's) comes along under an escaped name
        (``golem.sandbox.keep``): the host holds no ``.git``, the fork gets it back."""
        check_snapshottable(backend, box.spec)
        objects = self._private(tenant_of(box.spec), "objects")
        incoming = objects / f".incoming-{new_id('fork')}.tar"
        try:
            kept = await keep_archive(
                box.stream_archive("/", paths=list(ROOTS)),
                incoming,
                box.limits,
                within=ROOTS,
                git_names=True,
            )
            _, filled = await asyncio.to_thread(_read_kept, incoming, kept.found)
            yield Held(incoming, filled)
        finally:
            incoming.unlink(missing_ok=True)

    async def unpack(self, box: Box, held: Held) -> None:
        """Unpack a held copy into ``box`` as a snapshot is."""
        with held.path.open("rb") as archive:
            await _unpack(box, archive, held.roots, git_names=True)

    def all(self) -> list[SnapshotInfo]:
        """Every tenant's snapshots, oldest first."""
        if not self.root.is_dir():
            return []
        found = [
            info
            for tenant_dir in self.root.iterdir()
            if tenant_dir.is_dir()
            for info in self._read_names(tenant_dir)
        ]
        return sorted(found, key=lambda info: info.created)

    def _tenant_snapshots(self, tenant: str) -> list[SnapshotInfo]:
        return [
            info for info in self._read_names(self._tenant_dir(tenant)) if info.tenant == tenant
        ]

    @staticmethod
    def _read_names(tenant_dir: Path) -> Iterator[SnapshotInfo]:
        for path in sorted((tenant_dir / "names").glob("*.json")):
            with contextlib.suppress(OSError, ValidationError):
                info = SnapshotInfo.model_validate_json(path.read_bytes())
                if DIGEST.match(info.digest) and path.stem == info.name:
                    yield info

    def remove(self, info: SnapshotInfo) -> None:
        """Drop a snapshot's name, and its archive once no name points at it."""
        (self._tenant_dir(info.tenant) / "names" / f"{info.name}.json").unlink(missing_ok=True)
        self._drop_unreferenced(info.tenant, info.digest)

    def prune(
        self, *, older_than: float | None = None, max_bytes: int | None = None
    ) -> list[SnapshotInfo]:
        """Remove snapshots taken more than ``older_than`` seconds ago, then the oldest
        until what is kept fits in ``max_bytes``, and what a process that died while taking
        one left; returns the snapshots removed."""
        now = time.time()
        self._remove_stale_temporaries(now)
        kept = self.all()
        removed = [
            info for info in kept if older_than is not None and now - info.created > older_than
        ]
        kept = [info for info in kept if info not in removed]
        if max_bytes is not None:
            while kept and _stored_bytes(kept) > max_bytes:
                removed.append(kept.pop(0))
        for info in removed:
            self.remove(info)
        return removed

    def _remove_stale_temporaries(self, now: float) -> None:
        for path in self.root.glob("*/*/.*"):  # objects/.incoming-*, names/.<name>.*, trees/.*
            with contextlib.suppress(FileNotFoundError):
                if now - path.lstat().st_mtime <= STALE_SECONDS:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()


@dataclass(frozen=True)
class Held:
    """A box's writable state kept for a moment (``SnapshotStore.held``): the checked
    archive and the trees that hold anything."""

    path: Path
    roots: list[str]


async def _unpack(
    box: Box, archive: BinaryIO, roots: list[str], *, git_names: bool = False
) -> None:
    for root in roots:
        await box.put_archive(f"/{root}", archive_part(archive, root, git_names=git_names))


def _stored_bytes(infos: list[SnapshotInfo]) -> int:
    """Bytes the archives of ``infos`` take (one object per tenant and digest), and their
    kept trees, each counted as its archive's size again."""
    return sum(
        {
            (info.tenant, info.digest): info.size * (2 if info.backend in TREE_BACKENDS else 1)
            for info in infos
        }.values()
    )


def _read_kept(path: Path, found: list[str]) -> tuple[str, list[str]]:
    """The sha256 of an archive golem kept, and those of ``found`` (its roots) that hold
    more than themselves: a box from it gets only those unpacked, one upload each."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    filled: set[str] = set()
    with tarfile.open(path, mode="r|") as archive:
        for member in archive:
            archive.members.clear()  # type: ignore[attr-defined]  # else tarfile keeps every header
            filled.update(root for root in found if member.name.startswith(f"{root}/"))
    return digest.hexdigest(), sorted(filled)
