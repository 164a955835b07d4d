"""A run's checkout lives on the host; the box works on a copy of it.

The host checkout is copied into the box when the run's box starts (and again when a run
resumes in a new box); after every step that ran in the box, what git sees as changed there
(tracked and untracked files, not ignored ones) is copied back, and what changed on the host
but no longer in the box is restored. So the host checkout always holds the result of the
last finished step: git on the host commits it, and a crashed run resumes from it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from golem.core.errors import SandboxError
from golem.sandbox import Box, ExecRequest

__all__ = ["changed_paths", "copy_into_box", "sync_from_box"]

STATUS = ["git", "-c", "core.quotepath=off", "status", "--porcelain=v1", "-z", "-uall"]
_MODES = """
import json, os, sys
out = {}
for path in json.load(sys.stdin):
    regular = os.path.isfile(path) and not os.path.islink(path)
    out[path] = os.lstat(path).st_mode & 0o777 if regular else None
print(json.dumps(out))
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


def _safe_target(workspace: Path, path: str) -> Path:
    """Where ``path`` (named by the box: untrusted) goes on the host, refusing anything
    that would land outside the checkout or in .git, through ``..`` or a symlink."""
    parts = Path(path).parts
    if not parts or Path(path).is_absolute() or ".." in parts or parts[0] == ".git":
        raise SandboxError(f"the box reported a path golem will not write: {path!r}")
    root = workspace.resolve()
    parent = (workspace / path).parent.resolve()
    if parent != root and root not in parent.parents:
        raise SandboxError(f"{path!r} leads outside the checkout through a symlink")
    return parent / Path(path).name


def _host_changes(workspace: Path) -> list[str]:
    done = subprocess.run(STATUS, cwd=workspace, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SandboxError(f"git status failed in {workspace}: {done.stderr.strip()}")
    return changed_paths(done.stdout)


async def copy_into_box(box: Box, workspace: Path) -> None:
    """The host checkout (with .git and uncommitted changes) into the box's /workspace."""
    await box.put_dir(workspace, "/workspace")


async def sync_from_box(box: Box, workspace: Path) -> list[str]:
    """Make the host checkout match the box for every path git sees as changed on either
    side; returns those paths."""
    status = await box.execute(ExecRequest(cmd=STATUS, workdir="/workspace", timeout=120))
    if status.exit_code != 0:
        raise SandboxError(f"git status failed in the box: {status.stderr.strip()}")
    paths = sorted(set(changed_paths(status.stdout)) | set(_host_changes(workspace)))
    if not paths:
        return []
    probe = await box.execute(
        ExecRequest(code=_MODES, runtime="python", stdin=json.dumps(paths).encode(),
                    workdir="/workspace")
    )  # fmt: skip
    modes: dict[str, int | None] = json.loads(probe.stdout)
    for path in paths:
        target = _safe_target(workspace, path)
        mode = modes.get(path)
        if target.is_symlink() or target.is_file():
            target.unlink()  # never write through a link
        if mode is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(await box.get_file(f"/workspace/{path}"))
        target.chmod(mode)
    return paths
