"""A repository's installed dependencies, kept between runs: the install key and the cache.

The key says everything an install's result depends on: the tenant, the repository, the
box's image and backend, the install commands, the environment, the paths kept, and the
content of every file the install could read at the commit it installs from (the declared
``cache_keys`` and the files its commands name, transitively: ``install_inputs``). Two
runs with the same key get the same archive; anything else installs afresh.

Who writes is the host's decision, from its own git (``checkout_of``): an install on a
commit of the base branch as the host fetched it is kept under the base branch's key,
which every run on that base reads; any other (a follow-up on a pull request's head, a
run based on a tag or a commit) reads the base's entry when its key matches and otherwise
keeps its install under a key of its own commit, which no base-branch run computes.
Archives (``<key>.tar``, written by ``golem.sandbox.keep``, or for the other kind, a box
engine's images, by ``golem.sandbox.keep_image_archive``) are never unpacked on the host: a
run's box unpacks one into its ``/workspace`` (or its engine loads one). The least recently used are
removed once the cache passes its size.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import posixpath
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from golem.blueprint.install_inputs import CommitTree, install_inputs
from golem.checks import RepoConventions
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError
from golem.core.spec import GOLEM_HOME, WORKSPACE, BoxSpec
from golem.forge import git_environment, run_git_blocking
from golem.sandbox.hosttree import is_git_name

__all__ = [
    "INSTALL_ENV",
    "KEY_VERSION",
    "OFFLINE_ENV",
    "Checkout",
    "DependencyCache",
    "InstallKeyParts",
    "InstallKeys",
    "archive_names",
    "cache_paths",
    "checkout_of",
    "image_of",
    "in_checkout",
    "install_key",
    "install_keys",
    "kept_paths",
    "key_files",
    "read_inputs",
]

KEY_VERSION = "golem-dependencies-5"
"""Changes whenever what an archive holds, or how, changes: older archives no longer match."""

OFFLINE_ENV = {
    "PIP_NO_INDEX": "1",
    "npm_config_offline": "true",
    "CARGO_NET_OFFLINE": "true",
    "GOPROXY": "off",
}
"""Settings of a box without a network: package managers use what is installed and fail at
once where something is missing, instead of waiting on a registry they cannot reach."""

INSTALL_ENV = {
    "PIP_CACHE_DIR": "/workspace/.golem/downloads/pip",
    "npm_config_cache": "/workspace/.golem/downloads/npm",
    "YARN_CACHE_FOLDER": "/workspace/.golem/downloads/yarn",
}
"""Where the install box's package managers keep what they download: the workspace, which
is larger than the box's /tmp (their default, under HOME). Not kept: only ``cache`` is."""

CHUNK = 1024 * 1024
STALE_SECONDS = 86400.0
BASE_HISTORY = 1000
"""How far back along the base branch's first parents a checkout's commit is looked for."""
_KEY = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class InstallKeyParts:
    """What an install key is computed from."""

    tenant: str
    repo: str
    image: str
    commands: Sequence[str]
    env: Mapping[str, str]
    cache: Sequence[str]
    inputs: Mapping[str, str]
    """Each file the install could read -> the id of its content ("" missing):
    ``read_inputs``."""
    kind: Literal["dependencies", "images"] = "dependencies"
    """What the archive holds: installed dependencies, or a box engine's container images
    (``golem.blueprint.images``); one cache, two kinds, never one's key for the other."""


@dataclass(frozen=True)
class Checkout:
    """Where an install runs, as the host's own git says: its commit, and whether that is
    a commit of the base branch as the host fetched it."""

    commit: str
    branch: str | None
    """The host's remote-tracking ref of the base branch (``refs/remotes/origin/main``);
    None when the remote has no such branch (a tag, a commit)."""
    on_base: bool
    """The commit is on the base branch's first-parent history (its head or an older
    head), within ``BASE_HISTORY`` commits."""

    @property
    def base_scope(self) -> str | None:
        """The scope of the base branch's entry, which every run on it reads."""
        return f"branch {self.branch}" if self.branch is not None else None

    @property
    def scope(self) -> str:
        """The scope this checkout's install is kept under: the base branch's only on a
        commit of it, else the commit's own."""
        base = self.base_scope
        return base if self.on_base and base is not None else f"commit {self.commit}"


def cache_paths(conventions: RepoConventions) -> list[str]:
    """The conventions' ``cache`` paths, normalised: relative to the repository's root, or
    absolute beneath golem's home (``/tmp/golem/venv``); a ConfigError for any other (or
    one that names .git)."""
    paths: list[str] = []
    for raw in conventions.cache:
        text = raw.strip()
        home = text.startswith(f"{GOLEM_HOME}/")
        relative = text[len(GOLEM_HOME) + 1 :] if home else text
        path = posixpath.normpath(relative).strip("/") if relative else ""
        names = path.split("/")
        if (
            not path
            or (text.startswith("/") and not home)
            or any(n in ("", ".", "..") or is_git_name(n) for n in names)
        ):
            raise ConfigError(
                f"the dependency cache path {raw!r} is not a directory inside the repository "
                f"or golem's home ({GOLEM_HOME}); name paths relative to the repository's "
                f"root, such as node_modules, or beneath {GOLEM_HOME}, such as {GOLEM_HOME}/venv"
            )
        path = f"{GOLEM_HOME}/{path}" if home else path
        if path not in paths:
            paths.append(path)
    return paths


def in_checkout(paths: Sequence[str]) -> list[str]:
    """The cache paths inside the checkout (relative ones), not golem's home."""
    return [path for path in paths if not path.startswith("/")]


def archive_names(paths: Sequence[str]) -> list[str]:
    """Cache paths as an install's archive names them: relative to the box's root
    (``workspace/node_modules``, ``tmp/golem/venv``)."""
    return [path[1:] if path.startswith("/") else f"{WORKSPACE[1:]}/{path}" for path in paths]


def kept_paths(conventions: RepoConventions) -> list[str]:
    """The cache paths an install keeps: ``cache_paths``, at least one."""
    paths = cache_paths(conventions)
    if not paths:
        raise ConfigError(
            "the repository names install commands but no paths they make to keep; list "
            "them in .golem.toml's [dependencies] cache (e.g. .venv, node_modules)"
        )
    return paths


def key_files(workspace: Path, names: Sequence[str], rev: str = "HEAD") -> dict[str, str]:
    """What each of ``names`` holds at ``rev``, read from git (never through the
    checkout's symlinks): ``CommitTree.content_id``."""
    wanted = [posixpath.normpath(name).lstrip("/") for name in names]
    if not wanted:
        return {}
    tree = CommitTree.read(workspace, rev)
    return {name: tree.content_id(name) for name in wanted}


def read_inputs(
    workspace: Path, commands: Sequence[str], declared: Sequence[str], rev: str = "HEAD"
) -> dict[str, str]:
    """The install key's files at ``rev``: the ``declared`` keys (files, directories,
    patterns; "" when missing) and every file ``commands`` could read
    (``install_inputs``), each with the id of its content."""
    tree = CommitTree.read(workspace, rev)
    found = install_inputs(tree, commands)
    for name in declared:
        path = posixpath.normpath(name).lstrip("/")
        found.setdefault(path, tree.content_id(path))
    return dict(sorted(found.items()))


def checkout_of(workspace: Path, base: str) -> Checkout:
    """The checkout's commit and whether it is on the base branch, from the host's own
    refs (what the host fetched: never anything a box wrote)."""
    commit = _commit(workspace, "HEAD")
    if commit is None:
        raise ConfigError("the checkout has no commit to install from; check its clone")
    branch = next((ref for ref in _remote_refs(base) if _is_ref(workspace, ref)), None)
    if branch is None:
        return Checkout(commit, None, on_base=False)
    args = ["rev-list", "--first-parent", f"--max-count={BASE_HISTORY}", branch, "--"]
    done = run_git_blocking("git", args, cwd=workspace, env=_git_env())
    history = done.stdout.decode("ascii", "replace").split() if done.returncode == 0 else []
    return Checkout(commit, branch, on_base=commit in history)


def _remote_refs(base: str) -> list[str]:
    """The remote-tracking refs a base branch's name may mean (``main``,
    ``origin/main``)."""
    refs = [f"refs/remotes/origin/{base}"]
    if base.startswith("origin/"):
        refs.append(f"refs/remotes/{base}")
    return refs


def _is_ref(workspace: Path, ref: str) -> bool:
    """Whether ``ref`` is exactly the name of a ref (not a revision: ``main^``)."""
    args = ["show-ref", "--verify", "--quiet", "--", ref]
    return run_git_blocking("git", args, cwd=workspace, env=_git_env()).returncode == 0


def _commit(workspace: Path, rev: str) -> str | None:
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"]
    done = run_git_blocking("git", args, cwd=workspace, env=_git_env())
    found = done.stdout.decode("ascii", "replace").strip()
    return found if done.returncode == 0 and found else None


def _git_env() -> dict[str, str]:
    return git_environment(isolated=True, extra={"GIT_OPTIONAL_LOCKS": "0"})


@dataclass(frozen=True)
class InstallKeys:
    """The keys of one run's install: the archives it may use, in order, and the key
    its own install is kept under."""

    read: tuple[str, ...]
    write: str
    shared: bool
    """``write`` is the base branch's key (the checkout is a commit of the base branch)."""


def install_keys(parts: InstallKeyParts, checkout: Checkout) -> InstallKeys:
    """A checkout's keys: it reads the base branch's entry and its own, and writes only
    its own (the base branch's when it is a commit of the base branch)."""
    write = install_key(parts, checkout.scope)
    base = checkout.base_scope
    shared = checkout.on_base and base is not None
    read = (write,) if shared or base is None else (install_key(parts, base), write)
    return InstallKeys(read=read, write=write, shared=shared)


def install_key(parts: InstallKeyParts, scope: str) -> str:
    """The install key of ``parts`` under ``scope`` (``branch <ref>``: the base branch's
    entry, read by every run on it; ``commit <id>``: a checkout's own, off the base
    branch): sha256 of them, in a stable order."""
    data = {
        "version": KEY_VERSION,
        "kind": parts.kind,
        "tenant": parts.tenant,
        "repo": parts.repo,
        "scope": scope,
        "image": parts.image,
        "commands": list(parts.commands),
        "env": dict(sorted(parts.env.items())),
        "cache": list(parts.cache),
        "inputs": dict(sorted(parts.inputs.items())),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def image_of(spec: BoxSpec, config: GolemConfig) -> str:
    """What the box's files come from: its image, else the backend's default."""
    backend = config.engine.backend
    default = getattr(backend, "image", None) or "host"
    return f"{backend.type}:{spec.image or default}"


class DependencyCache:
    """The archives of installed dependencies, by install key."""

    def __init__(self, config: GolemConfig) -> None:
        settings = config.dependencies
        self.root = settings.cache_dir or config.state_dir / "cache" / "dependencies"
        self.max_bytes = settings.max_bytes

    def path(self, key: str) -> Path:
        """Where the archive of ``key`` is (or would be)."""
        if not _KEY.match(key):
            raise ValueError(f"not an install key: {key!r}")
        return self.root / f"{key}.tar"

    def take(self, key: str) -> bool:
        """Whether the archive of ``key`` is there; marks it used (for eviction)."""
        path = self.path(key)
        try:
            os.utime(path)
        except FileNotFoundError:
            return False
        return path.is_file()

    def open(self, key: str) -> BinaryIO | None:
        """The archive of ``key``, opened (it stays readable if it is evicted meanwhile)
        and marked used; None when it is not there."""
        try:
            handle = self.path(key).open("rb")
        except FileNotFoundError:
            return None
        with contextlib.suppress(OSError):
            os.utime(handle.fileno())
        return handle

    @staticmethod
    async def chunks(handle: BinaryIO) -> AsyncIterator[bytes]:
        """An opened archive's bytes, read off the event loop."""
        while data := await asyncio.to_thread(handle.read, CHUNK):
            yield data

    def evict(self, keep: str) -> list[str]:
        """Remove the least recently used archives (never ``keep``) until all fit in
        ``max_bytes``; the keys removed."""
        self._remove_stale_temporaries()
        archives: list[tuple[float, int, Path]] = []
        for path in self.root.glob("*.tar"):
            try:
                info = path.stat()
            except FileNotFoundError:
                continue  # removed by another run meanwhile
            archives.append((info.st_mtime, info.st_size, path))
        total = sum(size for _, size, _ in archives)
        removed: list[str] = []
        for _, size, path in sorted(archives):
            if total <= self.max_bytes:
                break
            if path.stem == keep:
                continue
            path.unlink(missing_ok=True)
            total -= size
            removed.append(path.stem)
        return removed

    def _remove_stale_temporaries(self) -> None:
        """Half-written archives of installs whose process died (a day old: no install
        writes that long)."""
        now = time.time()
        for path in self.root.glob(".golem-keep-*"):
            with contextlib.suppress(FileNotFoundError):
                if now - path.stat().st_mtime > STALE_SECONDS:
                    path.unlink()
