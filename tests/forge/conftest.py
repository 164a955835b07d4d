"""Fixtures of the forge tests: hermetic git, bare repositories to clone and push to."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

AUTHOR = ("Golem Test", "golem-test@example.invalid")


def git(*args: str, cwd: Path | None = None) -> str:
    """Run the real git (as a test's own hands, not golem's) and return its stdout."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def seed_bare(parent: Path, name: str = "origin.git", files: dict[str, str] | None = None) -> Path:
    """A bare repository whose ``main`` has one commit with ``files``."""
    work = parent / f"{name}-seed"
    bare = parent / name
    git("init", "-q", "-b", "main", str(work))
    for path, text in (files or {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}).items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git("add", "-A", cwd=work)
    git(
        "-c",
        "user.name=Seed",
        "-c",
        "user.email=seed@example.invalid",
        "commit",
        "-q",
        "-m",
        "first",
        cwd=work,
    )
    git("init", "-q", "--bare", "-b", "main", str(bare))
    git("push", "-q", str(bare), "main", cwd=work)
    return bare


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """git reads no user or system config of this machine (its identity, its helpers)."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_CONFIG_COUNT", "GIT_DIR", "GIT_WORK_TREE", "GIT_ASKPASS", "SSH_ASKPASS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository with one commit on ``main`` (README.md, src/app.py)."""
    return seed_bare(tmp_path / "remotes")
