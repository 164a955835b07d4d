"""Git repositories for run tests: examples/calculator as a bare remote, like a forge's."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "examples"
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def git(*args: str, cwd: Path) -> str:
    """git's output (it must succeed)."""
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout


def make_remote(parent: Path, name: str = "calculator") -> Path:
    """A bare repository holding examples/calculator on main (one commit)."""
    work = parent / f"{name}-seed"
    shutil.copytree(EXAMPLES / "calculator", work)
    git("init", "-q", "-b", "main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    remote = parent / f"{name}.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    return remote


def branch_commits(remote: Path, branch: str) -> list[str]:
    """Subjects and trailers of the commits ``branch`` has on top of main."""
    log = git("log", "--format=%B%x00", f"main..{branch}", cwd=remote)
    return [entry.strip() for entry in log.split("\0") if entry.strip()]


def push_fixed_branch(remote: Path, work: Path, branch: str = "golem/fix-add") -> None:
    """A branch pushed by hand to the bare ``remote`` (cloned into ``work``): the
    calculator's add() fixed, as a pull request golem opened would have it."""
    git("clone", "-q", str(remote), str(work), cwd=remote.parent)
    git("checkout", "-q", "-b", branch, cwd=work)
    source = (work / "calculator.py").read_text().replace("return a - b", "return a + b")
    (work / "calculator.py").write_text(source)
    git("commit", "-qam", "fix add", cwd=work)
    git("push", "-q", "origin", branch, cwd=work)
