"""Ecosystem defaults, the least trusted source: what a project of each ecosystem runs
when nothing more specific says: the install by lockfile, ``go test ./...``,
``cargo test``, and Python's (``python.py``)."""

from __future__ import annotations

from golem.checks.detect.ecosystem import (
    Dependencies,
    go_dependencies,
    node_dependencies,
    rust_dependencies,
)
from golem.checks.detect.found import TRUST_DEFAULT, Candidate, RepoFiles
from golem.checks.detect.python import PythonFacts, python_defaults
from golem.checks.detect.runners import node_manager

__all__ = ["ECOSYSTEMS", "dependencies_of", "ecosystem_defaults", "recognise"]

ECOSYSTEMS = ("python", "node", "go", "rust")
DEFAULT = "ecosystem default"


def recognise(files: RepoFiles, facts: PythonFacts) -> list[str]:
    """The ecosystems the repository's root says it is, in ``ECOSYSTEMS`` order."""
    present = {
        "python": facts.present,
        "node": files.exists("package.json"),
        "go": files.exists("go.mod"),
        "rust": files.exists("Cargo.toml"),
    }
    return [name for name in ECOSYSTEMS if present[name]]


def ecosystem_defaults(
    files: RepoFiles, facts: PythonFacts, ecosystems: list[str]
) -> list[Candidate]:
    """Each recognised ecosystem's default install and checks."""
    found: list[Candidate] = []
    if "python" in ecosystems and facts.present:
        found += python_defaults(facts)
    if "node" in ecosystems and files.exists("package.json"):
        _, install, lockfile = node_manager(files)
        why = f"lockfile {lockfile}" if lockfile else "no lockfile"
        found.append(Candidate("install", install, DEFAULT, why, TRUST_DEFAULT, "node"))
    if "go" in ecosystems and files.exists("go.mod"):
        found.append(
            Candidate("install", "go mod download", DEFAULT, "go.mod", TRUST_DEFAULT, "go")
        )
        found.append(Candidate("test", "go test ./...", DEFAULT, "go.mod", TRUST_DEFAULT))
    if "rust" in ecosystems and files.exists("Cargo.toml"):
        found.append(
            Candidate("install", "cargo fetch", DEFAULT, "Cargo.toml", TRUST_DEFAULT, "rust")
        )
        found.append(Candidate("test", "cargo test", DEFAULT, "Cargo.toml", TRUST_DEFAULT))
    return found


def dependencies_of(
    ecosystem: str, files: RepoFiles, facts: PythonFacts, directories: list[str], venv: bool
) -> list[Dependencies]:
    """What ``ecosystem``'s install makes and needs (node: per directory it installs in)."""
    if ecosystem == "python":
        return [facts.dependencies(venv)]
    if ecosystem == "node":
        return [node_dependencies(d, node_manager(files, d)[2]) for d in directories or [""]]
    if ecosystem == "go":
        return [go_dependencies()]
    return [rust_dependencies()]
