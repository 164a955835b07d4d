"""Base images built from Debian's packages, for machines that cannot pull from a registry.

``bootstrap`` runs mmdebstrap for a flavour (``minimal``: python3 for the supervisor;
``devbox``: python3, git, build tools, node, and dockerd with its client for a microVM box
with containers) and imports the result into the container engine, labelled with a content
hash of everything that went into it. A build whose hash is already there is skipped. The
same root file system, unpacked, serves the process backend as an image directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from golem.core.errors import BackendUnavailable, SandboxError
from golem.sandbox.supervisor import PROTOCOL_VERSION

__all__ = ["FLAVOURS", "BuiltImage", "Flavour", "bootstrap", "image_hash"]

Flavour = Literal["minimal", "devbox"]
FLAVOURS: dict[str, list[str]] = {
    "minimal": ["python3"],
    "devbox": [
        "python3",
        "python3-venv",
        "python3-pip",
        "git",
        "build-essential",
        "nodejs",
        "npm",
        "curl",
        "ca-certificates",
        "make",
        "procps",
        "docker.io",  # the private engine of a microVM box with containers (dockerd, CLI)
        "docker-compose",  # compose v1 (Python), also `docker compose` (COMPOSE_PLUGIN)
    ],
}
SUITE = "bookworm"
RECIPE = 1  # bump when the way images are made changes
HASH_LABEL = "golem.hash"
COMPOSE_PLUGIN = """#!/bin/sh
# docker compose: Debian's docker-compose (compose v1), as the docker CLI's compose plugin
if [ "$1" = docker-cli-plugin-metadata ]; then
    echo '{"SchemaVersion":"0.1.0","Vendor":"golem","ShortDescription":"docker-compose"}'
    exit 0
fi
shift
exec /usr/bin/docker-compose "$@"
"""
"""Bookworm has no compose v2 plugin: this one answers the CLI's plugin metadata call and
runs docker-compose for ``docker compose ...`` (the CLI passes ``compose`` first)."""
PLUGINS = "/usr/libexec/docker/cli-plugins"
# Mount points every golem box needs, created in the image itself; the compose plugin.
CUSTOMIZE = (
    'mkdir -p "$1/workspace" "$1/proc" "$1/dev" "$1/tmp" "$1/var/lib/docker" && chmod 1777 "$1/tmp"'
    f' && mkdir -p "$1{PLUGINS}" && printf %s "$GOLEM_COMPOSE_PLUGIN" >"$1{PLUGINS}/docker-compose"'
    f' && chmod 755 "$1{PLUGINS}/docker-compose"'
)


@dataclass(frozen=True)
class BuiltImage:
    """Where a bootstrapped image is: its engine tag and/or its root directory."""

    flavour: str
    hash: str
    tag: str | None
    rootfs: Path | None
    built: bool  # False when an image with this hash existed already


def image_hash(flavour: str) -> str:
    """Content hash of a flavour: packages, suite, recipe, supervisor protocol."""
    recipe = {
        "flavour": flavour,
        "packages": sorted(FLAVOURS[flavour]),
        "suite": SUITE,
        "recipe": RECIPE,
        "supervisor": PROTOCOL_VERSION,
        "customize": CUSTOMIZE,
        "compose_plugin": COMPOSE_PLUGIN,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def _mmdebstrap(flavour: str, target: Path) -> None:
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise BackendUnavailable(
            "mmdebstrap is not installed; run scripts/setup or `apt-get install mmdebstrap`"
        )
    argv = [
        tool,
        "--quiet",
        "--variant=apt",
        f"--include={','.join(FLAVOURS[flavour])}",
        f"--customize-hook={CUSTOMIZE}",
        SUITE,
        str(target),
    ]
    env = {**os.environ, "GOLEM_COMPOSE_PLUGIN": COMPOSE_PLUGIN}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        raise SandboxError(f"mmdebstrap failed for {flavour}: {' | '.join(tail)}")


def _find_tag(api: object, digest: str) -> str | None:
    """The image's tag carrying its short hash, as the engine spells it."""
    images = api.images(filters={"label": f"{HASH_LABEL}={digest}"})  # type: ignore[attr-defined]
    tags = [str(t) for image in images for t in image.get("RepoTags") or []]
    exact = [t for t in tags if t.endswith(":" + digest[:12])]
    candidates = exact or tags
    return candidates[0] if candidates else None


def _import(api: object, tarball: Path, flavour: str, digest: str) -> str:
    """Import the root file system and tag it (by image id: Podman qualifies short names)."""
    repository = f"golem/{flavour}"
    changes = [f"LABEL {HASH_LABEL}={digest}", f"LABEL golem.flavour={flavour}"]
    api.import_image(src=str(tarball), changes=changes)  # type: ignore[attr-defined]
    images = api.images(filters={"label": f"{HASH_LABEL}={digest}"})  # type: ignore[attr-defined]
    if not images:
        raise SandboxError(f"the engine did not keep the imported {flavour} image")
    image_id = images[0]["Id"]
    for name in (digest[:12], "latest"):
        api.tag(image_id, repository, name)  # type: ignore[attr-defined]
    found = _find_tag(api, digest)
    if found is None:
        raise SandboxError(f"the engine lost the tags of the imported {flavour} image")
    return found


def _unpack(tarball: Path, rootfs: Path) -> None:
    partial = rootfs.with_name(rootfs.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    subprocess.run(["tar", "--numeric-owner", "-xpf", str(tarball), "-C", str(partial)], check=True)
    partial.chmod(0o755)
    partial.rename(rootfs)


def _build(flavour: str, api: object | None, images_dir: Path | None) -> BuiltImage:
    if flavour not in FLAVOURS:
        raise SandboxError(f"unknown flavour {flavour!r}; choose one of {', '.join(FLAVOURS)}")
    digest = image_hash(flavour)
    tag = _find_tag(api, digest) if api is not None else None
    rootfs = images_dir / f"{flavour}-{digest[:12]}" if images_dir is not None else None
    need_tag = api is not None and tag is None
    need_rootfs = rootfs is not None and not rootfs.is_dir()
    if not (need_tag or need_rootfs):
        return BuiltImage(flavour, digest, tag, rootfs, built=False)
    with tempfile.TemporaryDirectory(prefix="golem-image-") as scratch:
        tarball = Path(scratch) / "rootfs.tar"
        _mmdebstrap(flavour, tarball)
        if need_tag:
            tag = _import(api, tarball, flavour, digest)
        if need_rootfs:
            assert rootfs is not None
            _unpack(tarball, rootfs)
    return BuiltImage(flavour, digest, tag, rootfs, built=True)


async def bootstrap(
    flavour: str, *, api: object | None = None, images_dir: Path | None = None
) -> BuiltImage:
    """Build ``flavour`` into the engine behind ``api`` and/or as a directory under
    ``images_dir``; skipped where an image of the same content hash exists."""
    if images_dir is not None:
        images_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
    return await asyncio.to_thread(_build, flavour, api, images_dir)
