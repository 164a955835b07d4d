"""The image cache: the container images a run's box engine needs, kept between runs.

It is the dependency cache's other kind (``InstallKeyParts.kind = "images"``): the same
directory, size bound and least-recently-used pruning, keys made the same way (per tenant,
repository, box image and the checkout's scope: the base branch's entry is written only by
a run on a commit of the base branch as the host fetched it) from the files that define the
images: every Dockerfile and Containerfile, the compose files the checks bring up, the CI
files whose ``services:`` name images, those images' names, and the dependency files the
install's cache is keyed by (``RepoConventions.cache_keys``: lockfiles, manifests), since
test code names images of its own (testcontainers, the docker SDK) and changes them with
its dependencies. No list of image names: whatever the engine holds is what was needed.

A run's box with containers loads the entry (``docker load`` in its engine) before its
services start; without one, once its services are up and (a blueprint with a baseline
node) its checks ran on the base tree (``steps.baseline``), so that the images the tests
pulled through the egress proxy are there too, and before any agent acted in it, the
images its engine holds but golem's own are saved and kept, checked as strictly as any
takeback (``golem.sandbox.keep_image_archive``). An archive refused, or one that does
not load, is said in a note and the run goes on cold.
"""

from __future__ import annotations

import asyncio
import dataclasses
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

from golem.blueprint.dependencies import (
    DependencyCache,
    InstallKeyParts,
    InstallKeys,
    checkout_of,
    image_of,
    install_keys,
)
from golem.blueprint.install_inputs import CommitTree
from golem.checks import RepoConventions
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError, SandboxError
from golem.core.sizes import format_size
from golem.sandbox import Box, KeptImages, engine_images, load_images, save_images

__all__ = ["IMAGE_FILES", "RunImages", "image_inputs", "image_keys", "keep_images", "warm_images"]

IMAGE_FILES = re.compile(
    r"(?:^|/)(?:(?:Dockerfile|Containerfile)(?:\.[^/]*)?|[^/]*\.(?:[Dd]ockerfile|[Cc]ontainerfile))$"
)
"""The files that build an image: ``Dockerfile``, ``Dockerfile.dev``, ``app.Dockerfile``,
``Containerfile`` and the like, anywhere in the repository."""


def image_inputs(tree: CommitTree, conventions: RepoConventions) -> dict[str, str]:
    """The files that define the run's images -> the id of their content ("" missing)."""
    names = {path for path in tree.entries if IMAGE_FILES.search(path)}
    names.update(conventions.compose)
    names.update(service.origin for service in conventions.services if service.image)
    names.update(posixpath.normpath(name).lstrip("/") for name in conventions.cache_keys)
    return {name: tree.content_id(name) for name in sorted(names)}


def image_keys(
    workspace: Path,
    conventions: RepoConventions,
    *,
    tenant: str,
    repo: str,
    image: str,
    base: str,
) -> InstallKeys:
    """The image cache's keys of a checkout (git reads: call it on a worker thread)."""
    parts = InstallKeyParts(
        tenant=tenant,
        repo=repo,
        image=image,
        commands=sorted({s.image for s in conventions.services if s.image}),
        env={},
        cache=[],
        inputs=image_inputs(CommitTree.read(workspace), conventions),
        kind="images",
    )
    return install_keys(parts, checkout_of(workspace, base))


async def warm_images(box: Box, config: GolemConfig, keys: InstallKeys) -> str | None:
    """Load the first entry of ``keys.read`` the cache holds into the box's engine; its
    key, or None when it holds none."""
    cache = DependencyCache(config)
    for key in keys.read:
        handle = cache.open(key)
        if handle is None:
            continue
        with handle:
            await load_images(box, cache.chunks(handle))
        return key
    return None


async def keep_images(box: Box, config: GolemConfig, key: str) -> KeptImages | None:
    """Save the images the box's engine holds (golem's own left out) under ``key``; None
    when it holds none. ``UnsafeBoxOutput`` when the archive breaks a rule; older entries
    pruned past ``[dependencies] max_bytes``."""
    images = await engine_images(box)
    if not images:
        return None
    cache = DependencyCache(config)
    held = box.limits  # within what the box could hold
    limits = dataclasses.replace(held, max_bytes=min(held.max_bytes, cache.max_bytes))
    kept = await save_images(box, cache.path(key), limits, images)
    cache.evict(keep=key)
    return kept


@dataclasses.dataclass(frozen=True)
class RunImages:
    """The image cache for one run's box: each step's failure a note, the run going on
    cold."""

    config: GolemConfig
    workspace: Path
    tenant: str
    repo: str
    base: str
    note: Callable[[str], None]

    async def keys(self, conventions: RepoConventions, box: Box) -> InstallKeys | None:
        """The checkout's keys; None with the cache off or its files unreadable (a note)."""
        if not self.config.dependencies.enabled:
            return None
        try:
            return await asyncio.to_thread(
                image_keys,
                self.workspace,
                conventions,
                tenant=self.tenant,
                repo=self.repo,
                image=image_of(box.spec, self.config),
                base=self.base,
            )
        except ConfigError as exc:
            self.note(f"images: no image cache for this run ({exc.message})")
            return None

    async def warm(self, box: Box, keys: InstallKeys) -> str | None:
        """The cache's entry loaded into the box's engine (a note); its key, or None."""
        try:
            key = await warm_images(box, self.config, keys)
        except SandboxError as exc:
            self.note(f"images: the cached images did not load ({exc.message}); starting cold")
            return None
        if key is not None:
            self.note(f"images: {key[:12]} loaded from the cache into the box's engine")
        return key

    async def keep(self, box: Box, key: str) -> None:
        """The engine's images kept under ``key`` (a note says what, or why not)."""
        try:
            kept = await keep_images(box, self.config, key)
        except SandboxError as exc:
            self.note(f"images: not kept ({exc.message}); the next run starts cold too")
            return
        if kept is not None:
            self.note(
                f"images: {key[:12]} kept ({', '.join(kept.tags)}; {format_size(kept.size)}, "
                f"{kept.entries} entries)"
            )
