"""What a source says: candidate commands with where they came from, and a capped,
in-repository reader of the files sources look at."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from golem.checks.contracts import Step
from golem.context import file_in_repo, read_text
from golem.core.yaml_text import load_yaml

__all__ = ["MAX_READ", "Candidate", "Dropped", "RepoFiles", "table"]

MAX_READ = 1024 * 1024
"""Build and CI files larger than this are not read (none real comes near)."""

TRUST_CI = 1
TRUST_RUNNER = 2
TRUST_DEFAULT = 3
TRUST_LAST = 4
"""Commands of tools that build their own environments at check time (tox, nox, hatch
environments): they need a network the checks do not have, so anything else goes first."""


@dataclass(frozen=True)
class Candidate:
    """One command a source names for a step."""

    step: Step
    command: str
    origin: str
    why: str
    trust: float
    ecosystem: str = ""
    """For an install: the ecosystem it installs for (python, node, go, rust)."""
    directory: str = ""
    """Where it runs, relative to the repository's root ("" for the root)."""
    job: str = ""
    """The CI job it is a step of (its file and name): a job's installs go with its checks."""


@dataclass(frozen=True)
class Dropped:
    """A command a source names that cannot run as written, and why."""

    command: str
    origin: str
    why: str


@dataclass
class RepoFiles:
    """The repository's files, read only inside it and capped; parsed files are cached."""

    root: Path
    _cache: dict[str, Any] = field(default_factory=dict)

    def text(self, rel: str) -> str | None:
        """The text of the regular file ``rel``; None when absent, outside, binary or
        larger than ``MAX_READ``."""
        real = file_in_repo(self.root, rel)
        read = read_text(real, MAX_READ) if real is not None else None
        return read.text if read is not None and not read.truncated else None

    def exists(self, *rels: str) -> bool:
        """Whether any of ``rels`` is a regular file inside the repository."""
        return any(file_in_repo(self.root, rel) is not None for rel in rels)

    def is_dir(self, rel: str) -> bool:
        """Whether ``rel`` is a directory of the repository (not a link out of it)."""
        path = self.root / rel
        return path.is_dir() and not path.is_symlink()

    def toml(self, rel: str) -> dict[str, Any]:
        """The TOML file ``rel`` as a table; empty when absent or invalid."""
        return self._parsed(rel, _load_toml)

    def json(self, rel: str) -> dict[str, Any]:
        """The JSON object in ``rel``; empty when absent or invalid."""
        return self._parsed(rel, _load_json)

    def yaml(self, rel: str) -> Any:
        """The YAML document in ``rel``; None when absent or invalid."""
        if rel not in self._cache:
            text = self.text(rel)
            try:
                self._cache[rel] = load_yaml(text) if text is not None else None
            except yaml.YAMLError:
                self._cache[rel] = None
        return self._cache[rel]

    def _parsed(self, rel: str, load: Any) -> dict[str, Any]:
        if rel not in self._cache:
            text = self.text(rel)
            value = load(text) if text is not None else None
            self._cache[rel] = value if isinstance(value, dict) else {}
        parsed: dict[str, Any] = self._cache[rel]
        return parsed


def _load_toml(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def table(data: Any, *keys: str) -> dict[str, Any]:
    """``data[keys[0]][keys[1]]...`` when each is a table, else empty."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}
