"""GitRepo against real git and local bare repositories."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from golem.core.errors import (
    ConfigError,
    GitError,
    GitPushRejected,
    GitRemoteError,
    UnsafeRepository,
)
from golem.forge import GitAuth, GitRepo
from golem.forge import git as git_module
from tests.forge.conftest import AUTHOR, git


async def test_clone_of_a_bare_repository_checks_out_its_default_branch(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")

    assert (tmp_path / "work" / "src" / "app.py").read_text() == "print('hi')\n"
    assert await repo.current_branch() == "main"
    assert await repo.default_branch() == "main"
    assert await repo.head() == git("rev-parse", "main", cwd=origin)
    assert await repo.remote_url() == str(origin)
    assert await repo.is_clean()


async def test_clone_of_a_working_tree_path_and_of_a_branch(origin: Path, tmp_path: Path) -> None:
    first = await GitRepo.clone(origin, tmp_path / "first")
    await first.checkout_branch("feature")
    (first.path / "NEW.md").write_text("new\n")
    await first.commit_all("add NEW", *AUTHOR)

    second = await GitRepo.clone(first.path, tmp_path / "second", branch="feature")

    assert (second.path / "NEW.md").exists()
    assert await second.current_branch() == "feature"


async def test_clone_into_a_directory_that_has_files_fails_clearly(
    origin: Path, tmp_path: Path
) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")

    with pytest.raises(GitError, match="already exists and is not an empty directory"):
        await GitRepo.clone(origin, tmp_path / "busy")


async def test_clone_of_a_missing_source_is_a_remote_error(tmp_path: Path) -> None:
    with pytest.raises(GitRemoteError, match="no such remote or repository"):
        await GitRepo.clone(tmp_path / "nowhere.git", tmp_path / "work")


async def test_commit_all_commits_every_change_as_the_given_author(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    await repo.checkout_branch("golem/fix")
    (repo.path / "README.md").write_text("# demo, changed\n")
    (repo.path / "src" / "app.py").unlink()
    (repo.path / "src" / "new.py").write_text("x = 1\n")
    (repo.path / ".gitignore").write_text("*.log\n")
    (repo.path / "debug.log").write_text("noise\n")

    sha = await repo.commit_all("fix: change the demo\n\nLonger body.", *AUTHOR)

    assert sha == await repo.head() == git("rev-parse", "golem/fix", cwd=repo.path)
    shown = git("log", "-1", "--format=%an|%ae|%cn|%ce", cwd=repo.path)
    assert shown == f"{AUTHOR[0]}|{AUTHOR[1]}|{AUTHOR[0]}|{AUTHOR[1]}"
    assert git("log", "-1", "--format=%B", cwd=repo.path) == "fix: change the demo\n\nLonger body."
    files = git("show", "--name-status", "--format=", cwd=repo.path).splitlines()
    assert sorted(files) == ["A\t.gitignore", "A\tsrc/new.py", "D\tsrc/app.py", "M\tREADME.md"]
    assert await repo.is_clean()


async def test_commit_all_with_nothing_changed_returns_none(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    head = await repo.head()

    assert await repo.commit_all("nothing", *AUTHOR) is None
    (repo.path / "README.md").write_text("changed\n")
    assert await repo.commit_all("something", *AUTHOR) is not None
    assert await repo.commit_all("nothing again", *AUTHOR) is None
    assert await repo.head() != head


async def test_push_puts_the_branch_on_the_remote(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    await repo.checkout_branch("golem/task-1")
    (repo.path / "a.txt").write_text("a\n")
    sha = await repo.commit_all("feat: a", *AUTHOR)

    await repo.push("golem/task-1")

    assert git("rev-parse", "golem/task-1", cwd=origin) == sha


async def test_diff_is_against_the_merge_base_not_the_moved_base(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    await repo.checkout_branch("golem/x")
    (repo.path / "src" / "app.py").write_text("print('hi')\nprint('bye')\n")
    (repo.path / "docs.md").write_text("one\ntwo\n")
    await repo.commit_all("change", *AUTHOR)
    other = await GitRepo.clone(origin, tmp_path / "other")
    (other.path / "README.md").write_text("# moved on\n")
    await other.commit_all("main moved", *AUTHOR)
    await other.push("main")
    await repo.fetch()

    diff = await repo.diff("origin/main")
    stat_ = await repo.diff_stat("origin/main")

    assert "+print('bye')" in diff
    assert "README.md" not in diff
    assert {(f.path, f.added, f.deleted) for f in stat_.files} == {
        ("src/app.py", 1, 0),
        ("docs.md", 2, 0),
    }
    assert stat_.summary() == "2 files changed, 3 insertions(+)"
    assert sorted(await repo.changed_paths("origin/main")) == ["docs.md", "src/app.py"]


async def test_diff_stat_reports_renames_and_binary_files(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / "src" / "app.py").rename(repo.path / "src" / "main.py")
    (repo.path / "logo.bin").write_bytes(bytes(range(256)))
    await repo.commit_all("rename", *AUTHOR)

    stat_ = await repo.diff_stat("HEAD~1")

    changes = {f.path: f for f in stat_.files}
    assert changes["src/main.py"].old_path == "src/app.py"
    assert changes["logo.bin"].added is None


async def test_changed_paths_without_a_base_lists_uncommitted_changes(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / "README.md").write_text("changed\n")
    (repo.path / "new dir").mkdir()
    (repo.path / "new dir" / "ünïcode.txt").write_text("x\n")

    assert not await repo.is_clean()
    assert sorted(await repo.changed_paths()) == ["README.md", "new dir/ünïcode.txt"]


async def test_a_resumed_run_finds_its_commit_by_trailer(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    await repo.checkout_branch("golem/r-1")
    (repo.path / "a.txt").write_text("a\n")
    sha = await repo.commit_all("feat: a", *AUTHOR, trailers={"Golem-Run": "r-1"})

    resumed = GitRepo(tmp_path / "work")

    assert await resumed.find_commit("Golem-Run: r-1") == sha
    assert await resumed.find_commit("Golem-Run: r-1", base="origin/main") == sha
    assert await resumed.find_commit("Golem-Run: r-2") is None
    assert await resumed.find_commit("Golem-Run: r-1", rev="origin/main") is None
    assert await resumed.find_commit("Golem-Run: r-1", rev="no-such-branch") is None
    assert await resumed.has_commit_with("Golem-Run: r-1")
    assert not await resumed.has_commit_with("Golem-Run: r-2")
    assert git("log", "-1", "--format=%(trailers:key=Golem-Run,valueonly)", cwd=repo.path) == "r-1"


async def test_find_commit_matches_whole_lines_only(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("feat: a", *AUTHOR, trailers={"Golem-Run": "r-10"})

    assert await repo.find_commit("Golem-Run: r-1") is None


async def test_bad_trailers_are_refused(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / "a.txt").write_text("a\n")

    with pytest.raises(GitError, match="cannot be written"):
        await repo.commit_all("x", *AUTHOR, trailers={"Golem-Run": "r-1\nEvil: yes"})


async def test_checkout_branch_resets_an_existing_branch(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    base = await repo.head()
    await repo.checkout_branch("golem/x")
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("a", *AUTHOR)

    await repo.checkout_branch("golem/x", "origin/main")

    assert await repo.current_branch() == "golem/x"
    assert await repo.head() == base
    with pytest.raises(GitError, match="no such commit or branch"):
        await repo.checkout_branch("golem/y", "origin/nope")
    with pytest.raises(GitError, match="not a usable branch name"):
        await repo.checkout_branch("--force")


async def test_an_empty_remote_gets_its_first_branch(tmp_path: Path) -> None:
    bare = tmp_path / "empty.git"
    git("init", "-q", "--bare", str(bare))
    repo = await GitRepo.clone(bare, tmp_path / "work")

    with pytest.raises(GitError, match="has no default branch"):
        await repo.default_branch()
    await repo.checkout_branch("main")
    (repo.path / "README.md").write_text("hello\n")
    sha = await repo.commit_all("first", *AUTHOR)
    await repo.push("main")

    assert git("rev-parse", "main", cwd=bare) == sha


async def test_push_to_a_missing_remote_says_so(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")

    with pytest.raises(GitRemoteError, match="no such remote or repository") as caught:
        await repo.push("main", remote="upstream")
    assert caught.value.returncode not in (0, None)
    assert "upstream" in caught.value.output


async def test_push_of_a_diverged_branch_is_rejected_then_forced(
    origin: Path, tmp_path: Path
) -> None:
    first = await GitRepo.clone(origin, tmp_path / "first")
    second = await GitRepo.clone(origin, tmp_path / "second")
    for repo, name in ((first, "one"), (second, "two")):
        (repo.path / f"{name}.txt").write_text(name)
        await repo.commit_all(name, *AUTHOR)
    await first.push("main")

    with pytest.raises(GitPushRejected, match="not a fast-forward"):
        await second.push("main")
    await second.fetch()
    await second.push("main", force=True)

    assert git("rev-parse", "main", cwd=origin) == await second.head()


async def test_push_refused_by_a_hook_says_why(origin: Path, tmp_path: Path) -> None:
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / "a.txt").write_text("a\n")
    await repo.commit_all("a", *AUTHOR)

    with pytest.raises(GitPushRejected, match="refused the push") as caught:
        await repo.push("main")
    assert "protected branch" in caught.value.message


async def test_hooks_written_into_the_workspace_never_run_on_the_host(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    marker = tmp_path / "hook-ran"
    for name in ("pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout"):
        hook = repo.path / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(0o755)
    (repo.path / "a.txt").write_text("a\n")

    await repo.checkout_branch("golem/x")
    await repo.commit_all("a", *AUTHOR)
    await repo.push("golem/x")

    assert not marker.exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("core.fsmonitor", "touch /tmp/pwned"),
        ("core.pager", "sh"),
        ("filter.x.clean", "sh -c evil"),
        ("include.path", "/tmp/other.config"),
        ("remote.origin.uploadpack", "sh -c evil"),
    ],
)
async def test_a_repository_config_that_could_run_commands_is_refused(
    origin: Path, tmp_path: Path, key: str, value: str
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    git("config", "--local", key, value, cwd=repo.path)

    with pytest.raises(UnsafeRepository, match=key.rsplit(".", 1)[0]):
        await repo.is_clean()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the clone to another user")
async def test_a_clone_owned_by_another_user_still_works(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    nobody = pwd.getpwnam("nobody")
    for path in [repo.path, *repo.path.rglob("*")]:
        os.lchown(path, nobody.pw_uid, nobody.pw_gid)
    (repo.path / "a.txt").write_text("a\n")

    assert git_refuses(repo.path)
    assert not await repo.is_clean()
    assert await repo.commit_all("a", *AUTHOR) is not None


def git_refuses(path: Path) -> bool:
    """Whether plain git calls ``path`` of dubious ownership."""
    done = subprocess.run(["git", "status"], cwd=path, capture_output=True, text=True, check=False)
    return "dubious ownership" in done.stderr


def test_a_token_is_refused_for_plain_http_to_another_host() -> None:
    with pytest.raises(ConfigError, match="only sent over HTTPS"):
        GitAuth("t0k3n", "http://git.example.com/o/r.git")
    assert GitAuth("t0k3n", "http://127.0.0.1:9/o/r.git").url
    assert "t0k3n" not in repr(GitAuth("t0k3n", "https://github.com/o/r.git"))


async def test_git_missing_from_the_host_is_a_clear_error(origin: Path, tmp_path: Path) -> None:
    with pytest.raises(GitError, match="install git"):
        await GitRepo.clone(origin, tmp_path / "work", git=str(tmp_path / "no-git"))


def test_shutil_finds_git() -> None:
    assert shutil.which("git") is not None
    assert stat.S_ISREG(Path(shutil.which("git") or "").stat().st_mode)


async def test_a_clone_url_with_a_token_in_it_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="carries a password or token") as caught:
        await GitRepo.clone("https://x-access-token:ghp_secret@github.com/o/r.git", tmp_path / "w")
    assert "ghp_secret" not in str(caught.value)


async def test_a_diff_against_an_unknown_base_says_to_fetch_it(
    origin: Path, tmp_path: Path
) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")

    with pytest.raises(GitError, match="no such branch or commit: fetch it"):
        await repo.diff("origin/nope")


async def test_a_stale_index_lock_says_how_to_clear_it(origin: Path, tmp_path: Path) -> None:
    repo = await GitRepo.clone(origin, tmp_path / "work")
    (repo.path / ".git" / "index.lock").write_text("")
    (repo.path / "a.txt").write_text("a\n")

    with pytest.raises(GitError, match=r"delete \.git/index\.lock"):
        await repo.commit_all("a", *AUTHOR)


async def test_a_git_that_hangs_is_stopped_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    hanging = tmp_path / "hanging-git"
    hanging.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    hanging.chmod(0o755)

    with pytest.raises(GitError, match=r"took longer than 0\.5 s"):
        await GitRepo.clone(
            "https://example.invalid/r.git", tmp_path / "w", git=str(hanging), timeout=0.5
        )

    # No pid file: git was stopped before its child started, so nothing was left behind.
    assert not pid_file.exists() or not _running(int(pid_file.read_text()))


def _running(pid: int) -> bool:
    """Whether ``pid`` is alive (a zombie waiting for its reaper is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def test_no_filter_driver_of_the_hosts_runs_on_a_repository_golem_clones_or_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's git config defines filter, diff and merge drivers (as git-lfs does); a
    repository's .gitattributes naming them (one a box wrote and someone merged) reaches
    none, neither at clone nor when golem stages, diffs and commits."""
    marker = tmp_path / "ran"
    driver = tmp_path / "driver.sh"
    driver.write_text(f'#!/bin/sh\necho "$1" >> {marker}\ncat\n')
    driver.chmod(0o755)
    config = tmp_path / "host.gitconfig"
    config.write_text(
        f'[filter "evil"]\n\tclean = {driver} clean\n\tsmudge = {driver} smudge\n'
        f'[diff "evil"]\n\ttextconv = {driver}\n\tcommand = {driver}\n'
    )
    work = tmp_path / "seed"
    git("init", "-q", "-b", "main", str(work))
    (work / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (work / "a.txt").write_text("a\n")
    git("add", "-A", cwd=work)
    git("-c", "user.name=S", "-c", "user.email=s@x", "commit", "-qm", "seed", cwd=work)
    bare = tmp_path / "origin.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    repo = await GitRepo.clone(bare, tmp_path / "work")
    assert (repo.path / "a.txt").read_text() == "a\n"
    (repo.path / "a.txt").write_text("b\n")
    await repo.commit_all("change", *AUTHOR)
    assert "+b" in await repo.diff("HEAD~1")
    assert not marker.exists()


async def test_a_git_too_old_for_golems_hardening_is_refused_not_run(tmp_path: Path) -> None:
    old = tmp_path / "git"
    real = shutil.which("git")
    old.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && echo "git version 2.30.2" && exit 0\n'
        f'exec {real} "$@"\n'
    )
    old.chmod(0o755)
    with pytest.raises(GitError, match=r"golem needs git 2\.32 or newer"):
        await GitRepo(tmp_path / "work", git=str(old)).clone_from(tmp_path / "nowhere")
    assert not (tmp_path / "work").exists()


def same_size_unsafe(text: str) -> str:
    """``text`` with its logallrefupdates line made into a pager of the same length."""
    line = next(ln for ln in text.splitlines(keepends=True) if "logallrefupdates" in ln)
    unsafe = "\tpager = sh #"
    return text.replace(line, unsafe + "x" * (len(line) - len(unsafe) - 1) + "\n")


def rewrite_in_place(config: Path, text: str) -> None:
    config.write_text(text)


def replace_by_rename(config: Path, text: str) -> None:
    fresh = config.with_name("config.new")
    fresh.write_text(text)
    fresh.replace(config)


@pytest.mark.parametrize("write", [rewrite_in_place, replace_by_rename])
async def test_a_config_changed_after_its_check_is_checked_again_whatever_its_size_and_times(
    origin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    write: Callable[[Path, str], None],
) -> None:
    """The check is skipped only while the config is the file it checked: a rewrite of
    the same size with its times put back is read again (its change time moved)."""
    monkeypatch.setattr(git_module, "SETTLED_NS", 0)  # a check is remembered at once
    repo = await GitRepo.clone(origin, tmp_path / "work")
    assert await repo.is_clean()  # checked, and remembered
    config = repo.path / ".git" / "config"
    before = config.stat()
    write(config, same_size_unsafe(config.read_text()))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert config.stat().st_size == before.st_size

    with pytest.raises(UnsafeRepository, match=r"core\.pager"):
        await repo.is_clean()
