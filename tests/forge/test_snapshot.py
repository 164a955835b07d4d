"""A checkout as bytes and back (golem.forge.snapshot), with real git against a local bare
repository: a fresh clone elsewhere gets the same branch, commits, index and work tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.core.errors import GitError
from golem.forge import GitRepo
from golem.forge.snapshot import restore_checkout, snapshot_checkout
from tests.forge.conftest import AUTHOR, git


def _status(path: Path) -> list[str]:
    """Every line of git status but the ignored files'."""
    out = git("status", "--porcelain=v1", "-uall", "--ignored", cwd=path)
    return [line for line in out.splitlines() if not line.startswith("!!")]


def _files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(path).parts
    }


async def test_a_restored_clone_has_the_branch_commits_and_uncommitted_work(
    origin: Path, tmp_path: Path
) -> None:
    first = await GitRepo.clone(origin, tmp_path / "first")
    await first.checkout_branch("golem/fix")
    (first.path / "COMMITTED.md").write_text("shipped\n")
    await first.commit_all("ship", *AUTHOR)  # a commit the remote does not have
    (first.path / "src" / "app.py").write_text("print('changed')\n")  # modified
    (first.path / "notes" / "deep").mkdir(parents=True)
    (first.path / "notes" / "deep" / "new.bin").write_bytes(b"\x00\xff" * 1000)  # untracked
    (first.path / "COMMITTED.md").unlink()  # deleted, not staged
    (first.path / ".gitignore").write_text("cache/\n")
    (first.path / "cache").mkdir()
    (first.path / "cache" / "big").write_text("ignored: never kept\n")
    data = await snapshot_checkout(first)
    assert data is not None
    assert git("for-each-ref", "refs/golem", cwd=first.path) == ""  # nothing left behind

    second = await GitRepo.clone(origin, tmp_path / "second")
    await restore_checkout(second, data)

    assert await second.current_branch() == "golem/fix"
    assert await second.head() == await first.head()
    expected = {k: v for k, v in _files(first.path).items() if not k.startswith("cache")}
    assert _files(second.path) == expected
    assert _status(second.path) == _status(first.path)
    assert not (second.path / "cache").exists()
    assert git("for-each-ref", "refs/golem", cwd=second.path) == ""


async def test_a_clean_checkout_on_a_remote_branch_restores_to_the_same_commit(
    origin: Path, tmp_path: Path
) -> None:
    first = await GitRepo.clone(origin, tmp_path / "first")
    data = await snapshot_checkout(first)
    assert data is not None
    second = await GitRepo.clone(origin, tmp_path / "second")
    await restore_checkout(second, data)
    assert (await second.current_branch(), await second.head()) == ("main", await first.head())
    assert await second.is_clean()


async def test_bytes_that_are_not_a_checkpoint_are_refused_and_change_nothing(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    before = await repo.head()
    with pytest.raises(GitError, match="not a golem checkpoint"):
        await restore_checkout(repo, b"PK\x03\x04 a zip")
    with pytest.raises(GitError, match="header is unreadable"):
        await restore_checkout(repo, b"golem-checkpoint 1\n{not json\n")
    assert await repo.head() == before
    assert await repo.is_clean()
