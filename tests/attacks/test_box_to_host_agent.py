"""Attacker suite, box -> host, through `golem agent --workspace DIR` as a user runs it: the
agent in the box tries to write through a symlink the user's directory holds (into its
.git, to a directory outside it), to hand back a .git file or a repository of its own
making, to replace the directory's own .git, or to leave a setuid program.

Each attempt must fail: the user's .git and every host file outside the directory are
unchanged, no repository of the box's making is in the directory, git run there afterwards
runs nothing of the box's, and the command exits non-zero naming the rule when it refused
something. On bubblewrap, dockerd and Podman.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.attacks.takeback_harness import (
    Markers,
    git_dirs_below,
    golem_agent,
    listing,
    make_markers,
    make_project,
    rule_of,
    snapshot,
    special_files,
    temporary_left,
    user_git_everywhere,
)
from tests.blueprint.repos import git
from tests.conftest import BOTH_BACKENDS, QUICK_START_BACKENDS

pytestmark = pytest.mark.bwrap

FSMONITOR = "printf '[core]\\n\\tfsmonitor = %s; false\\n' '{touch}'"


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


@pytest.fixture
def markers(reachable_dir: Path) -> Markers:
    return make_markers(reachable_dir)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
def test_the_agent_never_writes_through_a_link_into_the_users_git(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    (project / "meta").symlink_to(".git")
    before = snapshot(project / ".git")
    attack = "rm meta && mkdir meta && " + FSMONITOR.format(touch=markers.touch("meta"))
    done = golem_agent(backend, tmp_path, project, attack + " > meta/config")
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.host-link", done.stderr
    assert snapshot(project / ".git") == before
    assert (project / "meta").is_symlink()
    user_git_everywhere(project)
    assert markers.left() == []


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
@pytest.mark.parametrize("kind", ["plain-directory", "git-repository"])
def test_the_agent_never_writes_through_a_link_to_a_directory_outside(
    kind: str, backend: str, tmp_path: Path, reachable_dir: Path
) -> None:
    project = make_project(tmp_path, repository=kind == "git-repository")
    outside = reachable_dir / "outside"
    outside.mkdir()
    (outside / "config").write_text("the host's own\n")
    (project / "shared").symlink_to(outside)
    done = golem_agent(
        backend, tmp_path, project,
        "rm shared && mkdir shared && echo 'the box was here' > shared/config",
    )  # fmt: skip
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.host-link", done.stderr
    assert (outside / "config").read_text() == "the host's own\n"
    assert sorted(p.name for p in outside.iterdir()) == ["config"]


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
def test_the_agent_hands_back_no_git_file_or_repository_of_its_making(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    before = snapshot(project)
    attack = (
        f"git init -q boxrepo && git -C boxrepo config core.fsmonitor "
        f"'{markers.touch('boxrepo')}; false' && "
        "mkdir sub && echo 'gitdir: ../boxrepo/.git' > sub/.git && echo x > sub/f"
    )
    done = golem_agent(backend, tmp_path, project, attack)
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.git", done.stderr
    assert snapshot(project) == before
    user_git_everywhere(project)
    assert markers.left() == []


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
def test_the_agent_replacing_the_directorys_own_git_changes_nothing_of_it(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    before = snapshot(project / ".git")
    attack = (
        "rm -rf .git && git init -q && "
        f"git config core.fsmonitor '{markers.touch('own')}; false' && "
        f"printf '#!/bin/sh\\n{markers.touch('hook')}\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && echo changed >> README.md"
    )
    done = golem_agent(backend, tmp_path, project, attack)
    assert done.returncode == 0, done.stderr  # its .git is the host's: left out, no change
    assert snapshot(project / ".git") == before
    assert (project / "README.md").read_text().endswith("changed\n")  # the real change landed
    user_git_everywhere(project)
    assert markers.left() == []


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
def test_the_agent_leaves_no_bare_repository_of_its_making_in_the_directory(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    # No .git name at all: HEAD, objects/ and refs/ make a repository to git, whose config
    # (diff.external, hooks, ...) git run in that directory later takes as its own.
    attack = (
        "mkdir -p cache/objects/info cache/refs/heads && "
        "printf 'ref: refs/heads/main\\n' > cache/HEAD && "
        "touch cache/objects/info/packs cache/refs/heads/keep && "
        f"printf '[diff]\\n\\texternal = %s\\n' '{markers.touch('bare')}' > cache/config"
    )
    done = golem_agent(backend, tmp_path, project, attack)
    assert git_dirs_below(project) == [], done.stderr


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
def test_the_agent_leaves_no_setuid_program_in_the_directory(
    backend: str, tmp_path: Path, project: Path
) -> None:
    before = snapshot(project)
    done = golem_agent(backend, tmp_path, project, "cp /bin/sh rootshell && chmod 4755 rootshell")
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.mode", done.stderr
    assert special_files(project) == []
    assert snapshot(project) == before


EDITS = (
    "echo 'changed by the box' >> README.md && "
    "sed -i 's/return a - b/return a + b/' calculator.py && "
    "mkdir -p aaa-new/deep && echo new > aaa-new/deep/file.txt"
)


def said(done: subprocess.CompletedProcess[str]) -> str:
    """What the command told the user, its lines joined (the console wraps them)."""
    return " ".join(done.stderr.split())


def test_a_refusal_after_the_agents_edits_changes_nothing_and_leaves_no_box_made_tree(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    # The box's repository (HEAD, objects/, refs/, a config with core.worktree and
    # core.fsmonitor) comes before the .git the host refuses.
    repository = (
        "mkdir -p aaa-repo/objects/info aaa-repo/refs/heads && "
        "printf 'ref: refs/heads/main\\n' > aaa-repo/HEAD && "
        "touch aaa-repo/objects/info/packs aaa-repo/refs/heads/main && "
        "printf '[core]\\n\\tworktree = ..\\n\\tfsmonitor = %s; false\\n' "
        f"'{markers.touch('fsmonitor')}' > aaa-repo/config"
    )
    before = listing(project)
    done = golem_agent(
        backend, tmp_path, project, f"set -e; {EDITS}; {repository}; git init -q zzz; touch zzz/f"
    )
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.git", done.stderr
    assert listing(project) == before
    assert temporary_left(tmp_path) == [], "the box's tree is not left in a scratch directory"
    assert "nothing was changed" in said(done), done.stderr
    assert "kept in" not in said(done)
    assert git_dirs_below(project) == []
    user_git_everywhere(project)
    assert markers.left() == []


@pytest.mark.parametrize("backend", ["process"])
def test_a_git_directory_of_the_agents_file_and_the_users_own_files_changes_nothing(
    backend: str, tmp_path: Path, project: Path, markers: Markers
) -> None:
    # objects/ and refs/ are the user's (ignored by git), HEAD and config the agent's: the
    # box's copy-back alone holds no git directory, the user's directory after it would.
    (project / ".gitignore").write_text("cache/objects/\ncache/refs/\ncache/config\n")
    git("add", ".gitignore", cwd=project)
    git("commit", "-q", "-m", "ignore", cwd=project)
    (project / "cache" / "objects" / "info").mkdir(parents=True)
    (project / "cache" / "objects" / "info" / "packs").write_text("")
    (project / "cache" / "refs" / "heads").mkdir(parents=True)
    (project / "cache" / "config").write_text(
        f"[core]\n\tfsmonitor = {markers.touch('users-cache')}; false\n"
    )
    before = listing(project)
    done = golem_agent(
        backend, tmp_path, project, f"set -e; {EDITS}; echo 'ref: refs/heads/main' > cache/HEAD"
    )
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.git", done.stderr
    assert listing(project) == before
    assert temporary_left(tmp_path) == []
    assert "nothing was changed" in said(done), done.stderr


@pytest.mark.parametrize("backend", ["process"])
def test_a_tree_deeper_than_the_host_can_name_is_a_clean_refusal_that_changes_nothing(
    backend: str, tmp_path: Path, project: Path, reachable_dir: Path
) -> None:
    # Directories and a chain of links whose path fits beneath the box's /workspace and the
    # scratch directory, but passes PATH_MAX (4,096 bytes) beneath the user's directory.
    temporary = reachable_dir / "tmp"
    scratch = len(str(temporary)) + len("/golem-agent-12345678/")
    depth = 4096 - len(str(project)) + 8
    assert scratch + depth < 4090, "the scratch directory's path must be the shorter"
    names, rest = divmod(depth - len("/f"), 201)
    deep = "/".join(["d" * 200] * names + ["e" * max(rest - 1, 1)])
    make = (
        f"mkdir -p {deep} && echo x > {deep}/f && "
        f"ln -s f {deep}/l1 && ln -s l1 {deep}/l2 && ln -s ../{deep.rsplit('/', 1)[1]}/l2 {deep}/l3"
    )
    before = listing(project)
    done = golem_agent(backend, tmp_path, project, f"set -e; {EDITS}; {make}", temporary=temporary)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert rule_of(done.stderr) == "takeback.path", done.stderr
    assert listing(project) == before
    assert temporary_left(temporary) == []
