"""A run's checkout lives on the host; the box works on a copy of it.

The host checkout is copied into the box when the run's box starts (and again when a run
resumes in a new box). After every step that ran in the box, its changes come back as data:
the paths that changed on either side (the box's ``git status``, the host's) are asked of
the box as one tar stream and landed by ``golem.sandbox.takeback``, which refuses any
``.git`` path, link out of the tree, special file or mode and oversized file, and never
writes through a host symlink; a path the box no longer has is removed. The host's ``.git``
is never written from the box, so host git (isolated from the host's config) commits a tree
of plain files. The host checkout always holds the result of the last finished step: git on
the host commits it, and a crashed run resumes from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from golem.core.errors import SandboxError
from golem.forge import GitRepo
from golem.sandbox import Box, ExecRequest
from golem.sandbox.hosttree import split_path
from golem.sandbox.takeback import TakebackLimits, land_archive

__all__ = ["changed_paths", "copy_into_box", "sync_from_box"]

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


def changed_paths(porcelain: str) -> list[str]:
    """Paths in ``git status --porcelain=v1 -z`` output (both sides of a rename)."""
    entries = porcelain.split("\0")
    paths: list[str] = []
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        paths.append(path)
        if "R" in code or "C" in code:  # the next entry is where it came from
            paths.append(entries[index])
            index += 1
    return sorted(set(paths))


async def copy_into_box(box: Box, workspace: Path) -> None:
    """The host checkout (with .git and uncommitted changes) into the box's /workspace."""
    await box.put_dir(workspace, "/workspace")


async def _box_changes(box: Box) -> list[str]:
    """What the box's git says changed: which paths to ask for, nothing more."""
    python = box.runtimes.get("python", "python3")
    probe = await box.execute(
        ExecRequest(cmd=[python, "-I", "-S", "-c", _STATUS], workdir="/workspace", timeout=120)
    )
    try:
        status = json.loads(probe.stdout)
        code, porcelain = int(status["code"]), str(status["out"])
    except (ValueError, KeyError, TypeError):
        raise SandboxError(
            f"could not read git status in the box (exit {probe.exit_code}): "
            f"{probe.stderr_text.strip()[-500:] or probe.stdout_text.strip()[-500:]}"
        ) from None
    if probe.truncated:
        raise SandboxError(
            "git status in the box printed more than the box's max_output_bytes: too many "
            "changed files to take back; raise max_output_bytes or commit fewer files"
        )
    if code != 0:
        raise SandboxError(f"git status failed in the box: {status.get('err', '').strip()}")
    return changed_paths(porcelain)


async def sync_from_box(box: Box, workspace: Path, repo: GitRepo) -> list[str]:
    """Make the host checkout match the box for every path git sees as changed on either
    side; returns those paths."""
    ours = await repo.changed_paths()
    theirs = await _box_changes(box)
    submodules = await repo.gitlinks()  # another repository's content: not this change's
    paths = sorted({path.rstrip("/") for path in [*ours, *theirs]} - submodules)
    if not paths:
        return []
    for path in paths:
        split_path(path)  # every name checked before anything is asked or written
    wanted = set(paths)

    def asked(path: str) -> bool:
        return path in wanted or bool(_parents(path, wanted))

    archive = box.stream_archive("/workspace", paths=paths)
    limits = TakebackLimits.of(box.spec)
    await land_archive(archive, workspace, limits, wanted=asked, remove_missing=paths)
    return paths


def _parents(path: str, wanted: set[str]) -> list[str]:
    """The prefixes of ``path`` that were asked for (a directory asked whole)."""
    names = path.split("/")
    return [prefix for i in range(1, len(names)) if (prefix := "/".join(names[:i])) in wanted]
