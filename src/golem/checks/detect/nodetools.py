"""pnpm, yarn and bun where the box lacks them: installed by npm (which every Node box has)
into golem's home, at the version the repository names (``packageManager``) or its
lockfile implies, and only when the box has none of its own."""

from __future__ import annotations

import re

from golem.checks.detect.ecosystem import NODE_TOOLS
from golem.checks.detect.found import RepoFiles

__all__ = ["MANAGERS", "manager_installs"]

MANAGERS = ("pnpm", "yarn", "bun")
PNPM_BY_LOCKFILE = {"5": "7", "6": "8", "9": "9"}
PACKAGE_MANAGER = re.compile(r"^(pnpm|yarn|bun)@(\d[\w.\-]*)")
PNPM_LOCK = re.compile(r"^lockfileVersion:\s*['\"]?(\d+)", re.MULTILINE)


def manager_installs(files: RepoFiles, used: set[str], directory: str) -> list[tuple[str, str]]:
    """(command, why) installing each of ``used`` (pnpm, yarn) unless the box has it."""
    found = []
    for manager in MANAGERS:
        if manager in used:
            package, why = _package(files, manager, directory)
            command = (
                f"command -v {manager} >/dev/null || npm install --prefix {NODE_TOOLS} "
                f"--no-audit --no-fund {package}"
            )
            found.append((command, why))
    return found


def _package(files: RepoFiles, manager: str, directory: str) -> tuple[str, str]:
    prefix = f"{directory}/" if directory else ""
    named = files.json(f"{prefix}package.json").get("packageManager")
    match = PACKAGE_MANAGER.match(named) if isinstance(named, str) else None
    if match and match[1] == manager:
        return _npm_package(manager, match[2]), f"packageManager {match[1]}@{match[2]}"
    if manager == "bun":  # npm's bun package carries the binary in a platform package
        return "bun@1", "bun's lockfile"
    if manager == "pnpm":
        lock = PNPM_LOCK.search(files.text(f"{prefix}pnpm-lock.yaml") or "")
        major = PNPM_BY_LOCKFILE.get(lock[1] if lock else "9", "9")
        return f"pnpm@{major}", f"pnpm-lock.yaml version {lock[1] if lock else 'unknown'}"
    berry = "__metadata:" in (files.text(f"{prefix}yarn.lock") or "")
    return (_npm_package("yarn", "4") if berry else "yarn@1"), "yarn.lock"


def _npm_package(manager: str, version: str) -> str:
    """Yarn 2 and later are published as ``@yarnpkg/cli-dist``; yarn 1 as ``yarn``."""
    if manager == "yarn" and not version.startswith("1"):
        return f"@yarnpkg/cli-dist@{version}"
    return f"{manager}@{version}"
