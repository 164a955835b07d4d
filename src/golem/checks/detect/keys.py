"""The files an install's commands read, as cache keys: requirements and constraints
files they name, and the manifests of the projects they install (``-e .`` in a
subdirectory keys on that directory's ``pyproject.toml``)."""

from __future__ import annotations

import posixpath
import re
import shlex

__all__ = ["install_keys"]

CD = re.compile(r"^cd (\S+) && ")
FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
PROJECT = re.compile(r"^\.(\[.*\])?$")
MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg")


def install_keys(commands: list[str]) -> list[str]:
    """Paths, relative to the repository's root, that ``commands`` read."""
    found: list[str] = []
    for command in commands:
        directory, words = _where(command)
        for index, word in enumerate(words):
            named = _file_of(word, words[index + 1] if index + 1 < len(words) else "")
            if named:
                found.append(_under(directory, named))
            elif PROJECT.match(word) and "pip" in " ".join(words[:4]):
                found += [_under(directory, manifest) for manifest in MANIFESTS]
    return [path for path in dict.fromkeys(found) if not path.startswith("..")]


def _where(command: str) -> tuple[str, list[str]]:
    match = CD.match(command)
    directory = shlex.split(match[1])[0] if match else ""
    try:
        return directory, shlex.split(command[match.end() :] if match else command)
    except ValueError:
        return directory, []


def _file_of(word: str, following: str) -> str | None:
    if word in FILE_OPTIONS:
        return following or None
    for option in ("-r", "-c"):
        if word.startswith(option) and len(word) > 2 and not word.startswith("--"):
            return word[2:]
    for option in ("--requirement=", "--constraint="):
        if word.startswith(option):
            return word[len(option) :]
    return None


def _under(directory: str, rel: str) -> str:
    return (
        posixpath.normpath(posixpath.join(directory, rel)) if directory else posixpath.normpath(rel)
    )
