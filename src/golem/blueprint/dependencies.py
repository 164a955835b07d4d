"""A repository's installed dependencies, kept between runs: the install key and the cache.

The key says everything an install's result depends on: the tenant, the repository, the
box's image and backend, the install commands, the environment, the paths kept and the
content of the lockfiles and manifests (``cache_keys``) at the base commit. Two runs with
the same key get the same archive; anything else (another repository, another tenant, a
changed lockfile) installs afresh. Archives (``<key>.tar``, written by
``golem.sandbox.keep``) are never unpacked on the host: a run's box unpacks one into its
``/workspace``. The least recently used are removed once the cache passes its size.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import json
import os
import posixpath
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from golem.context import RepoConventions
from golem.core.config import GolemConfig
from golem.core.errors import ConfigError
from golem.core.spec import GOLEM_HOME, WORKSPACE, BoxSpec
from golem.forge import git_environment, run_git_blocking
from golem.sandbox.hosttree import is_git_name

__all__ = [
    "INSTALL_ENV",
    "KEY_VERSION",
    "OFFLINE_ENV",
    "DependencyCache",
    "InstallKeyParts",
    "archive_names",
    "cache_paths",
    "image_of",
    "in_checkout",
    "install_key",
    "kept_paths",
    "key_files",
]

KEY_VERSION = "golem-dependencies-3"
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
_KEY = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class InstallKeyParts:
    """What an install key is computed from."""

    tenant: str
    repo: str
    base: str
    """The base branch: a run on another branch never writes what the default's runs read."""
    image: str
    commands: Sequence[str]
    env: Mapping[str, str]
    cache: Sequence[str]
    keys: Mapping[str, str]
    """Each ``cache_keys`` file -> the id of its content at the base commit ("" missing)."""


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
    checkout's symlinks): a file's object id; for a directory or a glob pattern
    (``requirements/*.txt``), a digest of the files it matches; "" when nothing matches."""
    wanted = [posixpath.normpath(name).lstrip("/") for name in names]
    if not wanted:
        return {}
    env = git_environment(isolated=True, extra={"GIT_OPTIONAL_LOCKS": "0"})
    args = ["ls-tree", "-r", "-z", "--full-tree", rev]
    done = run_git_blocking("git", args, cwd=workspace, env=env)
    if done.returncode != 0:
        raise ConfigError(
            f"could not list the files of {rev} for the dependency key: "
            f"{done.stderr.strip()[-300:]}; check the repository's checkout"
        )
    files: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = line.partition("\t")
        if path:
            files[path] = meta.split(" ")[-1]
    return {name: _content_id(name, files) for name in wanted}


def _content_id(name: str, files: Mapping[str, str]) -> str:
    if name in files:
        return files[name]
    matched = sorted(
        f"{path} {oid}\n"
        for path, oid in files.items()
        if path.startswith(name + "/") or fnmatch.fnmatchcase(path, name)
    )
    return hashlib.sha256("".join(matched).encode()).hexdigest() if matched else ""


def install_key(parts: InstallKeyParts) -> str:
    """The install key: sha256 of the parts, in a stable order."""
    data = {
        "version": KEY_VERSION,
        "tenant": parts.tenant,
        "repo": parts.repo,
        "base": parts.base,
        "image": parts.image,
        "commands": list(parts.commands),
        "env": dict(sorted(parts.env.items())),
        "cache": list(parts.cache),
        "keys": dict(sorted(parts.keys.items())),
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
