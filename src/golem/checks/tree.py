"""The box's working tree as one git tree id: whether a check changed it, which paths, and
how to put it back.

Git in the box hashes the tree into a scratch copy of its index (the real index, and so
``git status`` and what a run takes back, are untouched). Everything here runs as
``python3 -I -S`` (nothing of the workspace is imported); its answer is JSON, and nothing
of it is trusted beyond a hex tree id and a capped list of path names for messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from golem.core.errors import SandboxError
from golem.core.spec import WORKSPACE
from golem.sandbox import Box, ExecRequest

__all__ = ["changed_between", "fingerprint", "remove_made", "restore"]

_TREE_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_PATHS_SHOWN = 20

_SCRIPT = """
import json, os, shutil, subprocess, sys, tempfile
def git(args, env=None, data=None):
    return subprocess.run(["git", *args], input=data, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env)
def fail(done):
    print(json.dumps({"error": done.stderr.decode("utf-8", "replace")[-1000:]}))
    sys.exit(0)
def snapshot(env, exclude):
    ignored = git(["check-ignore", "--no-index", "-z", "--stdin"], env,
                  b"\\0".join(map(os.fsencode, exclude))).stdout.split(b"\\0")
    exclude = [p for p in exclude if os.fsencode(p) not in ignored]  # naming one fails add
    done = git(["add", "-A", "--", "."] + [":(exclude)" + p for p in exclude], env)
    if done.returncode:
        fail(done)
    done = git(["write-tree"], env)
    if done.returncode:
        fail(done)
    return done.stdout.decode().strip()
def names(a, b):
    done = git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b])
    if done.returncode:
        fail(done)
    return [os.fsdecode(n) for n in done.stdout.split(b"\\0") if n]
mode, args = sys.argv[1], json.loads(sys.argv[2])
where = git(["rev-parse", "--git-path", "index"])
if where.returncode:
    fail(where)
index = where.stdout.decode().strip()
scratch = tempfile.mkdtemp(prefix="golem-tree-")
env = dict(os.environ, GIT_INDEX_FILE=os.path.join(scratch, "index"))
try:
    if os.path.exists(index):
        shutil.copy2(index, env["GIT_INDEX_FILE"])  # its mtime too: racy entries stay racy
    if mode == "tree":
        print(json.dumps({"tree": snapshot(env, args["exclude"])}))
    elif mode == "diff":
        print(json.dumps({"paths": names(args["a"], args["b"])}))
    elif mode == "artifacts":
        now = snapshot(env, args["exclude"])
        done = git(["diff-tree", "-r", "-z", "--name-only", "--no-renames",
                    "--diff-filter=A", args["tree"], now])
        if done.returncode:
            fail(done)
        made = [n for n in done.stdout.split(b"\\0") if n]
        for name in made:
            if os.path.lexists(name) and not os.path.isdir(name):
                os.unlink(name)
        tree = snapshot(env, args["exclude"]) if made else now
        print(json.dumps({"tree": tree, "paths": [os.fsdecode(n) for n in made]}))
    else:
        now = snapshot(env, args["exclude"])
        paths = names(args["tree"], now)
        done = git(["read-tree", args["tree"]], env)
        if done.returncode:
            fail(done)
        listed = git(["--literal-pathspecs", "ls-files", "-z", "--"] + paths, env)
        kept = [n for n in listed.stdout.split(b"\\0") if n] if paths else []
        for name in set(map(os.fsencode, paths)) - set(kept):
            if os.path.lexists(name) and not os.path.isdir(name):
                os.unlink(name)
        if kept:
            done = git(["checkout-index", "-f", "-z", "--stdin"], env, b"\\0".join(kept))
            if done.returncode:
                fail(done)
        print(json.dumps({"paths": paths}))
finally:
    shutil.rmtree(scratch, ignore_errors=True)
"""


async def fingerprint(box: Box, *, exclude: Sequence[str] = ()) -> str:
    """The tree id of the box's working tree as ``git add -A`` would stage it (ignored
    files and ``exclude``, e.g. the dependency caches, left out)."""
    answer = await _ask(box, "tree", {"exclude": list(exclude)})
    tree = str(answer.get("tree", ""))
    if not _TREE_ID.fullmatch(tree):
        raise SandboxError(f"git in the box gave no tree id for its working tree: {tree[:80]!r}")
    return tree


async def remove_made(box: Box, tree: str, *, exclude: Sequence[str] = ()) -> tuple[str, list[str]]:
    """Remove the files the box's working tree has and ``tree`` (a ``fingerprint``) lacks
    (what ran since made them: a check's report, its artifacts); the tree id after, and
    the paths removed (a few)."""
    answer = await _ask(box, "artifacts", {"tree": _checked(tree), "exclude": list(exclude)})
    after = str(answer.get("tree", ""))
    if not _TREE_ID.fullmatch(after):
        raise SandboxError(f"git in the box gave no tree id for its working tree: {after[:80]!r}")
    return after, _names(answer)


async def changed_between(
    box: Box, before: str, after: str, *, limit: int = _PATHS_SHOWN
) -> list[str]:
    """The paths (at most ``limit``: a few, for a message) that differ between two tree
    ids."""
    answer = await _ask(box, "diff", {"a": _checked(before), "b": _checked(after)})
    return _names(answer, limit)


async def restore(box: Box, tree: str, *, exclude: Sequence[str] = ()) -> list[str]:
    """Put the box's working tree back to ``tree`` (a ``fingerprint``): files that differ
    are written from it, files it lacks removed; the paths it touched (a few)."""
    answer = await _ask(box, "restore", {"tree": _checked(tree), "exclude": list(exclude)})
    return _names(answer)


def _checked(tree: str) -> str:
    if not _TREE_ID.fullmatch(tree):
        raise ValueError(f"not a tree id: {tree!r}")
    return tree


def _names(answer: dict[str, object], limit: int = _PATHS_SHOWN) -> list[str]:
    paths = answer.get("paths")
    if not isinstance(paths, list):
        raise SandboxError("git in the box gave no list of paths")
    return [str(path)[:1000] for path in paths[:limit]]


async def _ask(box: Box, mode: str, args: dict[str, object]) -> dict[str, object]:
    python = box.runtimes.get("python", "python3")
    done = await box.execute(
        ExecRequest(
            cmd=[python, "-I", "-S", "-c", _SCRIPT, mode, json.dumps(args)],
            workdir=WORKSPACE,
            timeout=300,
        )
    )
    try:
        answer = json.loads(done.stdout_text)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise SandboxError(
            f"could not read the working tree's state in the box (exit {done.exit_code}): "
            f"{done.stderr_text.strip()[-300:]}"
        )
    if "error" in answer:
        raise SandboxError(f"git in the box could not read its working tree: {answer['error']}")
    return answer
