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

from pathlib import Path

import pytest

from tests.attacks.takeback_harness import (
    Markers,
    git_dirs_below,
    golem_agent,
    make_markers,
    make_project,
    rule_of,
    snapshot,
    special_files,
    user_git_everywhere,
)
from tests.conftest import BOTH_BACKENDS

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


def test_the_agent_leaves_no_setuid_program_in_the_directory(
    backend: str, tmp_path: Path, project: Path
) -> None:
    before = snapshot(project)
    done = golem_agent(backend, tmp_path, project, "cp /bin/sh rootshell && chmod 4755 rootshell")
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.mode", done.stderr
    assert special_files(project) == []
    assert snapshot(project) == before
