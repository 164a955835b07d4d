"""Prepared repositories: a snapshot of a box after the checkout at a branch's head, the
install, the setup and a warm-up, that a run on the repository starts from
(docs/snapshots.md#prepared-repositories).

The snapshot holds no ``.git`` (none crosses from a box): the prepare run removes its
box's before it is taken, and a run's box gets the host's ``.git`` as every run's does.
The tree then moves from the prepared commit to the run's (``move_to_checkout``): the paths
the box's git and the host's see as changed are put from the host (or removed), so only
what changed crosses and nothing tracked is trusted from the snapshot unless the host's
index confirms it. A ``PreparedRecord`` says what a snapshot was made from; records live
beside the dependency cache's archives, one directory per tenant (named by a hash).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from golem.blueprint.dependencies import DependencyCache
from golem.blueprint.workspace import (
    Layout,
    changed_paths,
    copy_into_box,
    git_exclude,
    layout_of,
)
from golem.core.config import GolemConfig
from golem.core.errors import SandboxError
from golem.core.spec import WORKSPACE
from golem.forge import GitRepo
from golem.sandbox import Box, ExecRequest

__all__ = [
    "PreparedRecord",
    "PreparedRepos",
    "move_to_checkout",
    "place_git",
    "remove_in_box",
    "snapshot_name",
]


class PreparedRecord(BaseModel):
    """What a prepared snapshot was made from."""

    model_config = ConfigDict(extra="forbid")

    tenant: str
    repo: str = Field(description="The repository as runs name it (RunRequest.repo).")
    branch: str
    commit: str = Field(description="The branch's head it was prepared at.")
    name: str = Field(description="The snapshot's name.")
    digest: str = Field(description="The sha256 of the snapshot's archive.")
    image: str = Field(description="The backend and image of its box (image_of).")
    dependencies: str | None = Field(None, description="The install key it holds.")
    lockfiles: dict[str, str] = Field(
        default_factory=dict, description="The install's input files, each with its content id."
    )
    made: float = Field(default_factory=time.time)


def snapshot_name(
    repo: str, branch: str, image: str, kind: Literal["prepared", "attempts"] = "prepared"
) -> str:
    """The name of the prepared snapshot of ``repo``'s ``branch`` for boxes of ``image``
    (a tenant's own: the snapshot store keeps each tenant's names apart); ``attempts``:
    of the snapshot a best-of-N run's attempts start from."""
    return f"{kind}-{_hash(repo, branch, image)[:40]}"


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class PreparedRepos:
    """The records of the prepared snapshots kept on this machine, every tenant's."""

    def __init__(self, config: GolemConfig) -> None:
        self.root = DependencyCache(config).root / "prepared"

    def _path(self, tenant: str, repo: str, branch: str, image: str) -> Path:
        return self.root / _hash(tenant)[:32] / f"{_hash(repo, branch, image)[:40]}.json"

    def find(self, tenant: str, repo: str, branch: str, image: str) -> PreparedRecord | None:
        """The tenant's record for ``repo``'s ``branch`` and ``image``, if any (one that
        cannot be read, or names another, is none)."""
        path = self._path(tenant, repo, branch, image)
        try:
            record = PreparedRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            return None
        if (record.tenant, record.repo, record.branch, record.image) != (
            tenant,
            repo,
            branch,
            image,
        ):
            return None
        return record

    def of_tenant(self, tenant: str) -> list[PreparedRecord]:
        """The tenant's records, oldest first."""
        found = []
        for path in sorted((self.root / _hash(tenant)[:32]).glob("*.json")):
            try:
                record = PreparedRecord.model_validate_json(path.read_bytes())
            except (OSError, ValidationError):
                continue
            if record.tenant == tenant:
                found.append(record)
        return sorted(found, key=lambda record: record.made)

    def save(self, record: PreparedRecord) -> Path:
        """Keep ``record``, replacing the one before (written whole, then renamed)."""
        path = self._path(record.tenant, record.repo, record.branch, record.image)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".golem-record-")
        with os.fdopen(handle, "w") as file:
            file.write(record.model_dump_json())
        os.replace(temporary, path)
        return path


async def move_to_checkout(
    box: Box, workspace: Path, repo: GitRepo, *, excluded: list[str]
) -> Layout:
    """A box started from a prepared snapshot (its /workspace a tree without ``.git``)
    brought to the host's checkout: the host's ``.git`` placed (``place_git``), then every
    path the box's git sees as differing from that index, or the host sees as changed,
    removed in the box and put from the host where the host has it. Returns the
    checkout's layout."""
    layout = await asyncio.to_thread(layout_of, workspace)
    if layout.repositories != [""]:
        raise SandboxError(
            "a checkout with submodules or nested repositories is not started from a "
            "prepared snapshot; copy it whole"
        )
    await place_git(box, workspace, excluded=excluded)
    changed = await changed_paths(box, WORKSPACE, repo)
    await remove_in_box(box, changed, "the paths that changed since the snapshot")
    present = {path for path in changed if os.path.lexists(workspace / path)}
    if present:
        await copy_into_box(box, workspace, only=present)
    return layout


async def place_git(box: Box, workspace: Path, *, excluded: list[str]) -> None:
    """The host checkout's ``.git`` into the box's /workspace (``copy_into_box``'s rules:
    configs rewritten, no credential), ``excluded`` (the checkout's cache paths) kept out
    of git there."""
    await copy_into_box(box, workspace, only={".git"})
    await box.put_file(f"{WORKSPACE}/.git/info/exclude", git_exclude(workspace, excluded))


@contextlib.asynccontextmanager
async def git_set_aside(box: Box, workspace: Path, *, excluded: list[str]) -> AsyncIterator[None]:
    """The box's ``.git`` removed for the block (a snapshot or a fork of the box: a
    ``.git`` never crosses from a box), then placed again from the host (``place_git``)."""
    await remove_in_box(box, [f"{WORKSPACE}/.git"], "the box's .git for its copy")
    try:
        yield
    finally:
        await place_git(box, workspace, excluded=excluded)


async def remove_in_box(box: Box, paths: list[str], what: str) -> None:
    """Remove ``paths`` (relative to /workspace, or absolute) in the box, or SandboxError
    naming ``what``."""
    if not paths:
        return
    done = await box.execute(
        ExecRequest(cmd=["rm", "-rf", "--", *paths], workdir=WORKSPACE, timeout=300)
    )
    if done.exit_code != 0:
        raise SandboxError(f"could not remove {what}: {done.stderr_text.strip()[-300:]}")
