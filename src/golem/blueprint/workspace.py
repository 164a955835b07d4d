"""A host directory and its copy in a box: copied in, and its changes taken back as data.

One way for every caller: a run's checkout (after every step that ran in the box) and
``golem agent``'s directory. The directory is copied into the box with every git config in
it rewritten to one that holds no credential and names no command. After the box worked on
it, the paths that changed on either side (the box's ``git status`` and the host's, when the
directory is a git work tree; the whole tree otherwise) are asked of the box as one tar
stream and landed by ``golem.sandbox.takeback``, which refuses any ``.git`` path, link out of
the tree, special file or mode and oversized file, and never writes through a host symlink.
Landed in place (a run), a path the box no longer has is removed; landed in a scratch
directory (``golem agent``, which shows the diff before it applies it), it is left out there.
The host's ``.git`` is never written from the box, so host git (isolated from the host's
config) commits a tree of plain files.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from golem.core.errors import SandboxError
from golem.core.spec import WORKSPACE
from golem.forge import GitRepo
from golem.forge.diffstat import parse_status_paths
from golem.sandbox import Box, ExecRequest
from golem.sandbox.hosttree import split_path
from golem.sandbox.takeback import TakebackLimits, land_archive

__all__ = [
    "Layout",
    "changed_paths",
    "copy_into_box",
    "git_configs_of",
    "git_exclude",
    "layout_of",
    "take_back",
]

# Runs in the box (python3 -I -S: nothing from the workspace is imported): the box's git
# status as JSON, names kept byte for byte (surrogate escapes survive JSON).
_STATUS = """
import json, os, subprocess, sys
done = subprocess.run(
    ["git", "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z", "-uall"],
    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
)
print(json.dumps({"code": done.returncode, "out": os.fsdecode(done.stdout),
                  "err": done.stderr.decode("utf-8", "replace")[-2000:]}))
"""

GIT_DIR_DATA = frozenset({"objects", "refs", "logs", "hooks", "lfs", "info"})


@dataclass(frozen=True)
class Layout:
    """What of a host directory the box gets back as it was: its symlinks (relative path ->
    target) and its repositories ("" for the root itself; submodules, nested clones), whose
    ``.git`` is the host's and is never taken back from the box."""

    links: dict[str, str] = field(default_factory=dict)
    repositories: list[str] = field(default_factory=list)


def layout_of(root: Path) -> Layout:
    """``root``'s symlinks and repositories."""
    layout = Layout()
    for directory, subdirectories, names in os.walk(root):
        here = Path(directory)
        if (here / ".git").exists() or (here / ".git").is_symlink():
            layout.repositories.append("" if here == root else here.relative_to(root).as_posix())
        subdirectories[:] = [d for d in subdirectories if d != ".git"]
        for name in [*names, *subdirectories]:
            if (here / name).is_symlink():
                layout.links[(here / name).relative_to(root).as_posix()] = os.readlink(here / name)
    return layout


def git_configs_of(root: Path, repositories: list[str]) -> set[str]:
    """The git config files of ``root``'s repositories (``.git/config``, and those of
    submodules under ``.git/modules``), as relative paths."""
    found: set[str] = set()
    for repository in repositories:
        git_dir = root / repository / ".git"
        if not git_dir.is_dir() or git_dir.is_symlink():
            continue
        for directory, subdirectories, names in os.walk(git_dir):
            subdirectories[:] = [d for d in subdirectories if d not in GIT_DIR_DATA]
            for name in names:
                if name in ("config", "config.worktree"):
                    found.add((Path(directory) / name).relative_to(root).as_posix())
    return found


def git_exclude(workspace: Path, excluded: list[str]) -> str:
    """The checkout's own ``.git/info/exclude`` (golem's clone's) and ``excluded`` (paths
    relative to the checkout's root), one a line."""
    path = workspace / ".git" / "info" / "exclude"
    text = "" if path.is_symlink() or not path.is_file() else path.read_text(errors="replace")
    text = text if not text or text.endswith("\n") else text + "\n"
    return text + "".join(f"/{name}\n" for name in excluded)


async def copy_into_box(
    box: Box, workspace: Path, target: str = WORKSPACE, *, only: Collection[str] | None = None
) -> Layout:
    """``workspace`` (with .git and uncommitted changes) into the box at ``target``; every git
    config file in it (a repository's, a submodule's under .git/modules) goes in as one that
    holds no credential and names no command: a token kept there (actions/checkout's
    extraheader, a URL with a password) stays on the host. ``only``: just these relative
    paths (and what lies beneath them). Returns the directory's layout, for ``take_back``."""
    layout = await asyncio.to_thread(layout_of, workspace)
    configs = await asyncio.to_thread(git_configs_of, workspace, layout.repositories)
    wanted = None if only is None else _asked(set(only))
    above = {parent for path in only or () for parent in _parents(path)}

    def leave_out(name: str) -> bool:
        return name in configs or (wanted is not None and name not in above and not wanted(name))

    await box.put_dir(workspace, target, leave_out=leave_out)
    for config in sorted(configs):
        if wanted is not None and not wanted(config):
            continue
        git_dir = (workspace / config).parent
        text = await GitRepo(git_dir, check_config=False).shareable_config(workspace / config)
        await box.put_file(f"{target}/{config}", text)
    return layout


async def _box_changes(box: Box, target: str) -> list[str]:
    """What the box's git says changed under ``target``: which paths to ask for."""
    python = box.runtimes.get("python", "python3")
    probe = await box.execute(
        ExecRequest(cmd=[python, "-I", "-S", "-c", _STATUS], workdir=target, timeout=120)
    )
    if probe.truncated:
        raise SandboxError(
            "git status in the box printed more than the box's max_output_bytes: too many "
            "changed files to take back; raise max_output_bytes or commit fewer files"
        )
    try:
        status = json.loads(probe.stdout)
        code, porcelain = int(status["code"]), str(status["out"])
    except (ValueError, KeyError, TypeError):
        raise SandboxError(
            f"could not read git status in the box (exit {probe.exit_code}): "
            f"{probe.stderr_text.strip()[-500:] or probe.stdout_text.strip()[-500:]}"
        ) from None
    if code != 0:
        raise SandboxError(f"git status failed in the box: {status.get('err', '').strip()}")
    return parse_status_paths(porcelain)


async def changed_paths(box: Box, target: str, repo: GitRepo) -> list[str]:
    """The paths git sees as changed on either side (submodules' content left out: it is
    another repository's, not this change's), every name checked."""
    ours = await repo.changed_paths()
    theirs = await _box_changes(box, target)
    submodules = await repo.gitlinks()
    paths = sorted({path.rstrip("/") for path in [*ours, *theirs]} - submodules)
    for path in paths:
        split_path(path)  # every name checked before anything is asked or written
    return paths


async def take_back(
    box: Box,
    workspace: Path,
    layout: Layout,
    *,
    repo: GitRepo | None,
    target: str = WORKSPACE,
    into: Path | None = None,
) -> list[str] | None:
    """Land what changed in the box's copy of ``workspace``: in place (``into`` None), or
    beneath ``into``. With ``repo`` (the directory is a git work tree) only the paths git
    sees as changed on either side are asked for, and returned; without it, the whole tree
    is (landed in a scratch directory only), and None is returned."""
    if repo is None and into is None:
        raise ValueError("a whole tree is taken back into a scratch directory, not in place")
    paths = await changed_paths(box, target, repo) if repo is not None else None
    if paths == []:
        return []
    wanted = None if paths is None else _asked(set(paths))
    await land_archive(
        box.stream_archive(target, paths=paths, skip_git=layout.repositories),
        into or workspace,
        TakebackLimits.of(box.spec),
        wanted=wanted,
        skip_git=layout.repositories,
        known_links=layout.links,
        remove_missing=paths if into is None and paths else (),
    )
    return paths


def _parents(path: str) -> list[str]:
    """The directories ``path`` lies in (``a/b/c``: ``a/b`` and ``a``)."""
    names = path.split("/")
    return ["/".join(names[:i]) for i in range(1, len(names))]


def _asked(wanted: set[str]) -> Callable[[str], bool]:
    """Whether a path was asked for: itself, or a directory it lies in."""

    def asked(path: str) -> bool:
        names = path.split("/")
        return any("/".join(names[:i]) in wanted for i in range(1, len(names) + 1))

    return asked
