"""Paths as the model gives them (relative to the box's working directory) and shows them."""

from __future__ import annotations

import posixpath

from golem.core.errors import ToolProblem
from golem.sandbox import Box

__all__ = ["resolve", "shown"]


def resolve(box: Box, path: str) -> str:
    """``path`` as an absolute path in the box; relative paths start at its workdir."""
    if "\0" in path:
        raise ToolProblem(f"the path {path!r} contains a NUL character; no file has such a name")
    return posixpath.normpath(posixpath.join(box.spec.workdir, path))


def shown(path: str, workdir: str) -> str:
    """``path`` relative to ``workdir`` when it lies inside it, else absolute."""
    if path == workdir:
        return "."
    if path.startswith(workdir.rstrip("/") + "/"):
        return path[len(workdir.rstrip("/")) + 1 :]
    return path
