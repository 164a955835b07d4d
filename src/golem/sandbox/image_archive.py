"""A box's container images kept on the host: ``docker save``'s archive, checked member by
member, never unpacked on the host; only another box's engine loads it (``docker load``).

The archive crosses like any takeback (spooled, capped, its headers scanned, read with
tarfile behind the capped reader) and is written again, entry by entry, into a new archive
only when all of it passed:

- ``takeback.path``: relative paths of plain names only (no absolute path, no ``..``, no
  ``.git``), each named once.
- ``takeback.kind``: regular files and directories only: a symlink, hard link, device,
  FIFO or sparse entry is refused (``docker save`` deduplicates a layer with a symlink:
  the box replaces those before sending, ``engine_images.NORMALISE``).
- ``takeback.mode``: no setuid, setgid or sticky bit; files kept 0644 or 0755.
- ``takeback.size``: no file over ``max_file_bytes``, no archive over ``max_bytes``, at
  most ``max_entries`` entries.
- ``takeback.manifest``: a ``manifest.json`` of at most ``MAX_MANIFEST_BYTES``, read with
  pydantic (``ImageManifest``), every ``Config`` and ``Layers`` path it names a regular
  file of the archive itself, every tag a plain image reference.

A refusal raises ``UnsafeBoxOutput`` and leaves nothing at the destination.
"""

from __future__ import annotations

import asyncio
import io
import re
import tarfile
from collections.abc import AsyncIterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from golem.core.errors import UnsafeBoxOutput
from golem.core.sizes import format_size
from golem.sandbox.hosttree import split_path
from golem.sandbox.keep import ArchiveRewriter, is_regular
from golem.sandbox.limits import TakebackLimits
from golem.sandbox.takeback import landed_mode
from golem.sandbox.tarspool import spooled

__all__ = [
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "ImageManifest",
    "KeptImages",
    "keep_image_archive",
]

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_IMAGES = 1000
REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:-]{0,254}(?:@sha256:[0-9a-f]{64})?$")
"""An image reference as ``docker save`` writes a tag (``postgres:16``,
``registry.example:5000/team/app:1.2``): no spaces, controls or shell characters."""


class ImageManifest(BaseModel):
    """One image of ``manifest.json``: its config, tags and layers, paths in the archive."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    config: str = Field(alias="Config", min_length=1, max_length=4096)
    repo_tags: list[str] | None = Field(None, alias="RepoTags", max_length=MAX_IMAGES)
    layers: list[str] = Field(alias="Layers", max_length=MAX_IMAGES)


MANIFESTS = TypeAdapter(list[ImageManifest])


@dataclass(frozen=True)
class KeptImages:
    """What an image archive kept: its size on disk, its entries and the images' tags."""

    size: int
    entries: int
    tags: list[str]


async def keep_image_archive(
    chunks: AsyncIterable[bytes], destination: Path, limits: TakebackLimits
) -> KeptImages:
    """Check an image archive from a box (the rules above) and write its entries as a new
    archive at ``destination``, atomically: nothing is there unless all of it passed."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    async with spooled(chunks, limits, str(destination.parent)) as spool:
        return await asyncio.to_thread(_ImageKeeper(limits).write, spool, destination)


class _ImageKeeper(ArchiveRewriter[KeptImages]):
    """An image archive's entries: regular files and directories, each named once; its
    manifest checked against them at the end."""

    def __init__(self, limits: TakebackLimits) -> None:
        super().__init__(limits)
        self.names: set[str] = set()
        self.files: set[str] = set()
        self.manifest: bytes | None = None
        self.tags: list[str] = []

    def result(self, size: int, entries: int) -> KeptImages:
        return KeptImages(size, entries, self.tags)

    def check_whole(self) -> None:
        self.tags = self._checked_manifest()

    def entry(
        self, archive: tarfile.TarFile, member: tarfile.TarInfo
    ) -> tuple[tarfile.TarInfo, IO[bytes] | None] | None:
        path = "/".join(split_path(member.name))
        if not path:
            return None
        if path in self.names:
            raise UnsafeBoxOutput(path, "the archive names it twice", "takeback.path")
        self.names.add(path)
        info = self.header(member, path)
        if member.isdir():
            landed_mode(member.mode, path)  # a setgid or sticky directory is refused too
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            return info, None
        if not is_regular(member):
            raise UnsafeBoxOutput(
                path,
                "an image archive holds regular files and directories only (no link, "
                "device, FIFO or sparse file)",
                "takeback.kind",
            )
        source = self.regular_file(archive, member, info)
        self.files.add(path)
        if path != MANIFEST:
            return info, source
        if member.size > MAX_MANIFEST_BYTES:
            raise UnsafeBoxOutput(
                path,
                f"a manifest of {format_size(member.size)} (at most "
                f"{format_size(MAX_MANIFEST_BYTES)})",
                "takeback.manifest",
            )
        assert source is not None  # a regular file's data
        self.manifest = source.read(member.size)
        return info, io.BytesIO(self.manifest)

    def _checked_manifest(self) -> list[str]:
        """The tags of a manifest whose every path is a regular file of the archive."""
        if self.manifest is None:
            raise UnsafeBoxOutput(MANIFEST, "the archive has no manifest", "takeback.manifest")
        try:
            images = MANIFESTS.validate_json(self.manifest)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise UnsafeBoxOutput(
                MANIFEST, f"not a docker manifest ({where}: {problem['msg']})", "takeback.manifest"
            ) from None
        if not images or len(images) > MAX_IMAGES:
            raise UnsafeBoxOutput(
                MANIFEST, f"a manifest of {len(images)} images", "takeback.manifest"
            )
        tags: list[str] = []
        for image in images:
            for named in (image.config, *image.layers):
                self._check_named(named)
            for tag in image.repo_tags or []:
                if not REFERENCE.match(tag):
                    raise UnsafeBoxOutput(
                        MANIFEST,
                        f"the tag {tag[:200]!r} is not an image reference",
                        "takeback.manifest",
                    )
                tags.append(tag)
        return tags

    def _check_named(self, named: str) -> None:
        try:
            path = "/".join(split_path(named))
        except UnsafeBoxOutput as exc:
            raise UnsafeBoxOutput(
                MANIFEST, f"it names {named[:200]!r}, outside the archive", "takeback.manifest"
            ) from exc
        if path not in self.files:
            raise UnsafeBoxOutput(
                MANIFEST,
                f"it names {named[:200]!r}, which is no regular file of the archive",
                "takeback.manifest",
            )
