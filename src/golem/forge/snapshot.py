"""A checkout as bytes, and back: what a run's checkout holds beyond its remote, so that
another machine, with a fresh clone of the same remote, gets the same branch, commits and
work tree (a Ray cluster's run resumed on another node).

The snapshot is one header line (JSON: the branch and HEAD) and a git bundle of one commit
whose tree is the work tree (every file git would add: ignored ones, such as dependency
caches, stay out) and whose parent is HEAD; the bundle holds only what the remote's
branches lack. Restored, HEAD and the branch are as they were, the index is HEAD's, and
the work tree is the snapshot's: changes not committed stay uncommitted.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from golem.core.errors import GitError
from golem.forge.git import GitRepo
from golem.forge.gitcmd import check_ref_name

__all__ = ["restore_checkout", "snapshot_checkout"]

MAGIC = b"golem-checkpoint 1\n"
REF = "refs/golem/checkpoint"
IDENTITY = {
    "GIT_AUTHOR_NAME": "golem",
    "GIT_AUTHOR_EMAIL": "golem@localhost",
    "GIT_COMMITTER_NAME": "golem",
    "GIT_COMMITTER_EMAIL": "golem@localhost",
}


async def snapshot_checkout(repo: GitRepo) -> bytes | None:
    """The checkout at ``repo.path`` as bytes; None when it has no commit yet."""
    head = await repo.head()
    if head is None:
        return None
    branch = await repo.current_branch()
    with tempfile.TemporaryDirectory(prefix="golem-snapshot-") as scratch:
        index = Path(scratch) / "index"
        own_index = repo.path / ".git" / "index"
        if own_index.is_file():  # its stat data spares hashing the unchanged files again
            shutil.copyfile(own_index, index)
        env = {"GIT_INDEX_FILE": str(index), **IDENTITY}
        await repo.plumbing(["add", "--all"], env)
        tree = (await repo.plumbing(["write-tree"], env)).text
        commit = await repo.plumbing(["commit-tree", tree, "-p", head, "-m", "checkpoint"], env)
        bundle = Path(scratch) / "checkout.bundle"
        await repo.plumbing(["update-ref", REF, commit.text], {})
        try:
            await repo.plumbing(["bundle", "create", str(bundle), REF, "--not", "--remotes"], {})
        finally:
            await repo.plumbing(["update-ref", "-d", REF], {})
        header = json.dumps({"branch": branch, "head": head}).encode()
        return MAGIC + header + b"\n" + bundle.read_bytes()


async def restore_checkout(repo: GitRepo, data: bytes) -> None:
    """Make the fresh clone at ``repo.path`` what ``snapshot_checkout`` saw."""
    if not data.startswith(MAGIC):
        raise GitError("not a golem checkpoint (its first line is wrong)")
    header, _, bundle_bytes = data[len(MAGIC) :].partition(b"\n")
    try:
        said = json.loads(header)
        branch, head = said["branch"], str(said["head"])
    except (ValueError, KeyError, TypeError) as exc:
        raise GitError(f"a golem checkpoint's header is unreadable: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="golem-snapshot-") as scratch:
        bundle = Path(scratch) / "checkout.bundle"
        bundle.write_bytes(bundle_bytes)
        await repo.plumbing(["fetch", "--quiet", "--no-tags", str(bundle), f"+{REF}:{REF}"], {})
    try:
        if branch is None:
            await repo.plumbing(["checkout", "--quiet", "--detach", head, "--"], {})
        else:
            await repo.plumbing(["checkout", "--quiet", "-B", check_ref_name(branch), head, "--"], {})
        await repo.plumbing(["read-tree", "-u", "--reset", REF], {})
        await repo.plumbing(["reset", "--quiet"], {})  # the index is HEAD's again
    finally:
        await repo.plumbing(["update-ref", "-d", REF], {})
