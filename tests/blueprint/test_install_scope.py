"""Who writes which dependency archive (``checkout_of``, ``install_keys``), decided from the
host's own refs of real clones of a local bare repository: only a commit of the base
branch as the host fetched it writes the base branch's entry; a pull request's head, a
commit merged in from a side branch, or a base that is no branch writes only its own."""

from __future__ import annotations

from pathlib import Path

from golem.blueprint.dependencies import Checkout, InstallKeyParts, checkout_of, install_keys
from tests.blueprint.repos import git

PARTS = InstallKeyParts(
    tenant="acme", repo="r", image="process:host", commands=["sh install.sh"], env={},
    cache=[".venv"], inputs={"install.sh": "a1"},
)  # fmt: skip
MAIN = "refs/remotes/origin/main"


def commit(work: Path, name: str) -> str:
    (work / name).write_text(f"{name}\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", name, cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()


def remote_and_clone(parent: Path) -> tuple[Path, Path, Path]:
    """A bare remote whose main has two commits, the work tree that pushes to it, and a
    fresh clone of it (a run's checkout)."""
    work = parent / "work"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    commit(work, "one")
    commit(work, "two")
    remote = parent / "remote.git"
    git("clone", "-q", "--bare", str(work), str(remote), cwd=parent)
    git("remote", "add", "origin", str(remote), cwd=work)
    git("fetch", "-q", "origin", cwd=work)
    clone = parent / "clone"
    git("clone", "-q", str(remote), str(clone), cwd=parent)
    return remote, work, clone


def test_the_base_branchs_head_writes_the_base_branchs_entry(tmp_path: Path) -> None:
    _, _, clone = remote_and_clone(tmp_path)
    head = git("rev-parse", "HEAD", cwd=clone).strip()
    checkout = checkout_of(clone, "main")
    assert checkout == Checkout(head, MAIN, on_base=True)
    keys = install_keys(PARTS, checkout)
    assert keys.read == (keys.write,)
    assert keys.shared
    assert checkout_of(clone, "origin/main").on_base  # a base named as the remote's ref


def test_a_pull_requests_head_reads_the_base_entry_and_writes_only_its_own(
    tmp_path: Path,
) -> None:
    _, work, clone = remote_and_clone(tmp_path)
    base = install_keys(PARTS, checkout_of(clone, "main"))
    git("checkout", "-q", "-b", "golem/change", cwd=work)
    pr_head = commit(work, "agent")
    git("push", "-q", "origin", "golem/change", cwd=work)
    git("fetch", "-q", "origin", cwd=clone)
    git("checkout", "-q", "-B", "golem/change", "origin/golem/change", cwd=clone)
    git("branch", "-f", "main", pr_head, cwd=clone)  # a local main moved there counts for nothing
    checkout = checkout_of(clone, "main")
    assert checkout == Checkout(pr_head, MAIN, on_base=False)
    keys = install_keys(PARTS, checkout)
    assert not keys.shared
    assert keys.write != keys.read[0]  # never the base's entry
    assert keys.read == (base.write, keys.write)
    git("checkout", "-q", "main", cwd=clone)  # the same commit, whatever the branch's name
    assert install_keys(PARTS, checkout_of(clone, "main")).write == keys.write


def test_an_older_head_of_the_base_branch_still_writes_its_entry(tmp_path: Path) -> None:
    _, work, clone = remote_and_clone(tmp_path)
    old = git("rev-parse", "HEAD", cwd=clone).strip()
    git("checkout", "-q", "-b", "side", "HEAD~1", cwd=work)
    side = commit(work, "side")
    git("checkout", "-q", "main", cwd=work)
    git("merge", "-q", "--no-ff", "-m", "merge side", "side", cwd=work)
    commit(work, "three")
    git("push", "-q", "origin", "main", cwd=work)
    git("fetch", "-q", "origin", cwd=clone)  # the base moved on since the checkout was made
    assert checkout_of(clone, "main") == Checkout(old, MAIN, on_base=True)
    git("checkout", "-q", "--detach", side, cwd=clone)  # merged in, but never main's head
    assert checkout_of(clone, "main") == Checkout(side, MAIN, on_base=False)


def test_a_base_that_is_no_branch_of_the_remote_writes_only_its_commits_entry(
    tmp_path: Path,
) -> None:
    _, _, clone = remote_and_clone(tmp_path)
    head = git("rev-parse", "HEAD", cwd=clone).strip()
    git("tag", "v1", cwd=clone)
    for base in ("v1", head, "main^", "main~0", "feature"):
        checkout = checkout_of(clone, base)
        assert checkout == Checkout(head, None, on_base=False), base
        keys = install_keys(PARTS, checkout)
        assert keys.read == (keys.write,)
        assert not keys.shared
    assert checkout.scope == f"commit {head}"
