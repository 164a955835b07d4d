"""Attacks on the image cache: what a box's engine saved (``docker save``) crosses to the
host as an archive that is kept, never unpacked there, and loaded into a later box's engine.

A box (its agent, a container, the repository's build) plants an archive that would write
on the host if anything unpacked it, or whose manifest makes ``docker load`` read beyond
it. Each is refused with the rule that stops it; the cache keeps what it held, and nothing
lands on the host outside it. The archives are built with tarfile and driven through
``keep_image_archive``, which ``save_images`` hands a box's archive to.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.core import UnsafeBoxOutput
from golem.sandbox import keep_image_archive
from golem.sandbox.image_archive import MAX_MANIFEST_BYTES
from golem.sandbox.limits import TakebackLimits

LIMITS = TakebackLimits(max_file_bytes=1024**2, max_bytes=4 * 1024**2, max_entries=64)
CONFIG = "c0ffee.json"
LAYER = "0123abcd/layer.tar"


def entry(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o644
    for field, value in fields.items():
        setattr(info, field, value)
    return info


def manifest(config: str = CONFIG, layers: tuple[str, ...] = (LAYER,), tag: str = "app:1") -> bytes:
    return json.dumps([{"Config": config, "RepoTags": [tag], "Layers": list(layers)}]).encode()


def image(*extra: tuple[tarfile.TarInfo, bytes], body: bytes | None = None) -> bytes:
    """A saved image as docker writes one (a layer directory, the config, the manifest),
    with ``extra`` entries after the layer and the manifest ``body``."""
    entries = [
        (entry("0123abcd", tarfile.DIRTYPE, mode=0o755), b""),
        (entry("0123abcd/VERSION"), b"1.0"),
        (entry(LAYER), b"layer data"),
        *extra,
        (entry(CONFIG), b'{"architecture": "amd64"}'),
        (entry("manifest.json"), manifest() if body is None else body),
    ]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for info, data in entries:
            info.size = len(data) if info.isreg() else 0
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


async def chunks(data: bytes, size: int = 65536) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


ATTACKS = {
    "a symlink": ((entry("0123abcd/json", tarfile.SYMTYPE, linkname="/etc/passwd"), b""),),
    "a relative symlink, as docker save deduplicates a layer": (
        (entry("4567/layer.tar", tarfile.SYMTYPE, linkname="../0123abcd/layer.tar"), b""),
    ),
    "a hard link": ((entry("0123abcd/h", tarfile.LNKTYPE, linkname="etc/shadow"), b""),),
    "a character device": ((entry("0123abcd/null", tarfile.CHRTYPE), b""),),
    "a block device": ((entry("0123abcd/disk", tarfile.BLKTYPE), b""),),
    "a FIFO": ((entry("0123abcd/pipe", tarfile.FIFOTYPE), b""),),
    "a setuid file": ((entry("0123abcd/su", mode=0o4755), b"#!/bin/sh"),),
    "a setgid directory": ((entry("g", tarfile.DIRTYPE, mode=0o2755), b""),),
    "an absolute name": ((entry("/etc/cron.d/planted"), b"* * * * * root sh"),),
    "a parent-directory name": ((entry("0123abcd/../../planted"), b"x"),),
    "a .git name": ((entry(".git/hooks/post-checkout"), b"x"),),
    "an oversized member": ((entry("0123abcd/big"), b"\1" * (LIMITS.max_file_bytes + 1)),),
    "a second entry of the manifest's name": ((entry("manifest.json"), b"[]"),),
}
RULES = {
    "a symlink": "takeback.kind",
    "a relative symlink, as docker save deduplicates a layer": "takeback.kind",
    "a hard link": "takeback.kind",
    "a character device": "takeback.kind",
    "a block device": "takeback.kind",
    "a FIFO": "takeback.kind",
    "a setuid file": "takeback.mode",
    "a setgid directory": "takeback.mode",
    "an absolute name": "takeback.path",
    "a parent-directory name": "takeback.path",
    "a .git name": "takeback.git",
    "an oversized member": "takeback.size",
    "a second entry of the manifest's name": "takeback.path",
}
MANIFESTS = {
    "a layer outside the archive": manifest(layers=("../../etc/shadow",)),
    "an absolute layer": manifest(layers=("/etc/shadow",)),
    "a layer the archive lacks": manifest(layers=("9999/layer.tar",)),
    "a directory as its layer": manifest(layers=("0123abcd",)),
    "a config outside the archive": manifest(config="../c0ffee.json"),
    "a tag that is no image reference": manifest(tag="app:1; rm -rf /"),
    "no manifest at all": b"",
    "a manifest that is not docker's": b'{"Config": "c0ffee.json"}',
    "a manifest that is not JSON": b"\x00\xff not json",
    "an oversized manifest": b" " * (MAX_MANIFEST_BYTES + 1),
}


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache directory already holding one entry (which a refusal must leave as it was)."""
    root = tmp_path / "cache"
    root.mkdir()
    (root / ("a" * 64 + ".tar")).write_bytes(b"an earlier entry")
    return root


def everything(root: Path) -> dict[str, bytes]:
    """Every path beneath ``root`` and what each file holds."""
    found: dict[str, bytes] = {}
    for directory, _, files in os.walk(root):
        found[directory] = b""
        for name in files:
            found[os.path.join(directory, name)] = Path(directory, name).read_bytes()
    return found


async def refused(data: bytes, cache: Path) -> UnsafeBoxOutput:
    before = everything(cache.parent)
    with pytest.raises(UnsafeBoxOutput) as caught:
        await keep_image_archive(chunks(data), cache / ("b" * 64 + ".tar"), LIMITS)
    assert everything(cache.parent) == before  # no entry, no temporary, nothing beside
    return caught.value


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_an_image_archive_with_a_forbidden_member_is_refused_and_the_cache_kept(
    attack: str, cache: Path
) -> None:
    error = await refused(image(*ATTACKS[attack]), cache)

    assert error.rule == RULES[attack]


@pytest.mark.parametrize("attack", list(MANIFESTS))
async def test_an_image_manifest_naming_anything_but_the_archives_own_files_is_refused(
    attack: str, cache: Path
) -> None:
    body = MANIFESTS[attack]
    data = image(body=body) if body else _without_manifest()

    error = await refused(data, cache)

    assert error.rule in {"takeback.manifest", "takeback.size"}
    assert error.path == "manifest.json"


def _without_manifest() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = entry(LAYER)
        info.size = 4
        archive.addfile(info, io.BytesIO(b"data"))
    return buffer.getvalue()


async def test_an_image_archive_past_the_entry_cap_is_refused(cache: Path) -> None:
    many = [(entry(f"0123abcd/f{number}"), b"x") for number in range(LIMITS.max_entries)]

    error = await refused(image(*many), cache)

    assert error.rule == "takeback.size"


async def test_an_image_archive_past_the_total_cap_is_refused(cache: Path) -> None:
    half = LIMITS.max_file_bytes
    many = [(entry(f"0123abcd/part{number}"), b"\2" * half) for number in range(5)]

    error = await refused(image(*many), cache)

    assert error.rule == "takeback.size"


async def test_a_plain_image_archive_is_kept_with_its_tags_and_its_files_normalised(
    cache: Path,
) -> None:
    data = image((entry("0123abcd/json", mode=0o600, uid=1000, uname="someone"), b"{}"))
    destination = cache / ("c" * 64 + ".tar")

    kept = await keep_image_archive(chunks(data), destination, LIMITS)

    assert kept.tags == ["app:1"]
    with tarfile.open(destination) as archive:
        members = {member.name: member for member in archive.getmembers()}
        assert archive.extractfile("manifest.json").read() == manifest()  # type: ignore[union-attr]
    assert set(members) == {
        "0123abcd",
        "0123abcd/VERSION",
        LAYER,
        "0123abcd/json",
        CONFIG,
        "manifest.json",
    }
    assert all(m.uid == 0 and not m.uname and m.mode in (0o644, 0o755) for m in members.values())
