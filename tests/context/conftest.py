"""Real repositories in temporary directories: files written, git initialised, committed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

MakeRepo = Callable[..., Path]


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (relative path -> text) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git(root: Path, *args: str) -> None:
    """Run git in ``root`` as a test author, failing the test when git fails."""
    subprocess.run(
        [
            "git", "-c", "user.name=golem tests", "-c", "user.email=tests@golem.invalid",
            "-c", "commit.gpgsign=false", "-C", str(root), *args,
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """A factory: a git repository (``git=False``: a plain directory) holding ``files``,
    all committed."""

    def make(files: dict[str, str], *, name: str = "repo", use_git: bool = True) -> Path:
        root = tmp_path / name
        root.mkdir()
        write_tree(root, files)
        if use_git:
            git(root, "init", "-q", "-b", "main")
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "init")
        return root

    return make
