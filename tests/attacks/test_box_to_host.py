"""Attacker suite, box -> host, during an ordinary `golem run` (minion blueprint, scripted
model, a local bare repository): an agent in the box tries to make the host run a program
of its choosing through what the run takes back (nested repositories, submodules, symlinks
into .git, its own .git, an index it wrote, gitattributes drivers the host configured).

Each attempt must fail: no marker of the attacker's command appears on the host (not
during the run, not when a person runs git in the checkout afterwards), the host's .git is
as it was; and a refused run ends with an error naming the rule. On bubblewrap, dockerd
and Podman.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.sandbox import Engine
from tests.attacks.takeback_harness import (
    FIX_CALCULATOR,
    HostGit,
    Markers,
    git_dirs_below,
    make_markers,
    rule_of,
    run_attack,
    scripted,
    user_git_everywhere,
)
from tests.blueprint.repos import git, make_remote
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


@pytest.fixture
def markers(reachable_dir: Path) -> Markers:
    return make_markers(reachable_dir)


HOOK = "printf '#!/bin/sh\\n%s\\n' '{touch}' > {path} && chmod +x {path}"
HOOK_NAMES = ["pre-commit", "post-commit", "pre-push", "post-checkout", "reference-transaction",
              "post-index-change", "fsmonitor-watchman", "pre-auto-gc"]  # fmt: skip
IDENTITY = "-c user.name=box -c user.email=box@example.invalid"

# Writes a git index (version 2) whose entries are the given names, every one pointing at
# the empty blob: a box that tells its own git status which paths exist.
WRITE_INDEX = """git hash-object -w --stdin </dev/null >/dev/null && python3 - {names} <<'PY'
import hashlib, struct, sys
names = sorted(name.encode() for name in sys.argv[1:])
body = b"DIRC" + struct.pack(">II", 2, len(names))
for name in names:
    entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0)
    entry += bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
    entry += struct.pack(">H", len(name)) + name
    body += entry + b"\\0" * (8 - len(entry) % 8)
open(".git/index", "wb").write(body + hashlib.sha1(body).digest())
PY"""


def _hooks(directory: str, touch: str) -> str:
    return " && ".join(HOOK.format(touch=touch, path=f"{directory}/{name}") for name in HOOK_NAMES)


def nested_fsmonitor(m: Markers) -> str:
    return (
        f"git init -q vendor/lib && git -C vendor/lib config core.fsmonitor "
        f"'{m.touch('nested-fsmonitor')}; false' && echo x > vendor/lib/f"
    )


def nested_hooks(m: Markers) -> str:
    return (
        "git init -q tools/sub && mkdir tools/sub/myhooks && "
        f"{_hooks('tools/sub/myhooks', m.touch('nested-hookspath'))} && "
        f"{_hooks('tools/sub/.git/hooks', m.touch('nested-hook'))} && "
        "git -C tools/sub config core.hooksPath myhooks && echo x > tools/sub/f"
    )


def submodule(m: Markers) -> str:
    # A gitlink, .gitmodules and a .git *file* leading to a repository the box made (with
    # fsmonitor), outside any .git directory of the box's.
    return (
        f"git init -q modsrc && git -C modsrc {IDENTITY} commit -q --allow-empty -m m && "
        "mkdir sub && mv modsrc/.git zz-box-gitdir && rm -r modsrc && "
        "git --git-dir=zz-box-gitdir config core.worktree ../sub && "
        f"git --git-dir=zz-box-gitdir config core.fsmonitor '{m.touch('submodule')}; false' && "
        "echo 'gitdir: ../zz-box-gitdir' > sub/.git && "
        "printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules && "
        "git update-index --add --cacheinfo "
        "160000,$(git --git-dir=zz-box-gitdir rev-parse HEAD),sub"
    )


def link_to_git_config(m: Markers) -> str:
    return (
        "ln -s .git/config settings && "
        f"printf '[core]\\n\\tfsmonitor = %s; false\\n' '{m.touch('link-config')}' >> settings"
    )


def link_to_git_hooks(m: Markers) -> str:
    return f"ln -s .git/hooks hooks && {_hooks('hooks', m.touch('link-hooks'))}"


def dotgit_spelled_otherwise(m: Markers) -> str:
    return f"mkdir -p .GIT/hooks && {_hooks('.GIT/hooks', m.touch('dotgit-case'))}"


def index_names_git_paths(m: Markers) -> str:
    hooks = _hooks(".git/hooks", m.touch("index-git"))
    return f"{hooks} && " + WRITE_INDEX.format(names=".git/hooks/pre-commit calculator.py")


def index_names_parent_paths(m: Markers) -> str:
    return WRITE_INDEX.format(names="../../outside calculator.py")


REFUSED: dict[str, tuple[Callable[[Markers], str], str]] = {
    "nested-repository-fsmonitor": (nested_fsmonitor, "takeback.git"),
    "nested-repository-hooks-and-hookspath": (nested_hooks, "takeback.git"),
    "submodule-git-file-to-box-repository": (submodule, "takeback.git"),
    "symlink-to-git-config-written-through": (link_to_git_config, "takeback.link"),
    "symlink-to-git-hooks": (link_to_git_hooks, "takeback.link"),
    "dotgit-spelled-in-capitals": (dotgit_spelled_otherwise, "takeback.git"),
    "index-naming-git-paths": (index_names_git_paths, "takeback.git"),
    "index-naming-paths-above-the-tree": (index_names_parent_paths, "takeback.path"),
}


@pytest.mark.parametrize("attack", list(REFUSED))
async def test_a_box_cannot_make_a_run_land_git_metadata_the_host_would_execute(
    attack: str,
    config: GolemConfig,
    engine: Engine,
    remote: Path,
    markers: Markers,
    tmp_path: Path,
) -> None:
    make_script, rule = REFUSED[attack]
    watch = HostGit(config.state_dir)
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {make_script(markers)}")
    state, prs = await run_attack(config, engine, remote, model, on_event=watch)
    assert state.status == "failed"
    assert rule_of(state.error) == rule, state.error
    assert state.current == "implement"  # refused as the agent step's changes came back
    assert prs == []
    assert git("branch", "--list", state.branch, cwd=remote) == ""  # nothing pushed
    checkout = Path(state.workspace)
    watch.assert_untouched(checkout)
    assert git_dirs_below(checkout) == []
    user_git_everywhere(checkout)
    assert markers.left() == []


async def test_a_box_rewriting_its_own_git_directory_changes_nothing_on_the_host(
    config: GolemConfig, engine: Engine, remote: Path, markers: Markers, tmp_path: Path
) -> None:
    own = (
        f"git config core.fsmonitor '{markers.touch('own-fsmonitor')}; false' && "
        f"{_hooks('.git/hooks', markers.touch('own-hook'))} && "
        f"mkdir .git/myhooks && {_hooks('.git/myhooks', markers.touch('own-hookspath'))} && "
        "git config core.hooksPath .git/myhooks && "
        f"git config core.pager '{markers.touch('own-pager')}' && "
        f"git config diff.external '{markers.touch('own-diff')}' && "
        + WRITE_INDEX.format(names="calculator.py ghost")  # an index of its own making
    )
    watch = HostGit(config.state_dir)
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {own}")
    state, prs = await run_attack(config, engine, remote, model, on_event=watch)
    assert state.status == "succeeded", state.error  # nothing of it crossed: a normal run
    [pr] = prs
    assert "+    return a + b" in pr.diff
    assert "ghost" not in pr.diff
    checkout = Path(state.workspace)
    watch.assert_untouched(checkout)
    user_git_everywhere(checkout)
    assert markers.left() == []


async def test_a_tracked_symlink_into_git_replaced_by_a_directory_never_writes_the_hosts_git(
    config: GolemConfig, engine: Engine, reachable_dir: Path, markers: Markers, tmp_path: Path
) -> None:
    remote = make_remote(reachable_dir, "linked")
    seed = reachable_dir / "linked-seed"
    (seed / "meta").symlink_to(".git")  # a repository may track a link into its .git
    git("add", "meta", cwd=seed)
    git("commit", "-q", "-m", "meta", cwd=seed)
    git("push", "-q", str(remote), "main", cwd=seed)
    attack = (
        "rm meta && mkdir meta && "
        f"printf '[core]\\n\\tfsmonitor = %s; false\\n' '{markers.touch('via-meta')}' "
        "> meta/config"
    )
    watch = HostGit(config.state_dir)
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {attack}")
    state, _ = await run_attack(config, engine, remote, model, on_event=watch)
    checkout = Path(state.workspace)
    watch.assert_untouched(checkout)  # the link was replaced, never written through
    user_git_everywhere(checkout)
    assert markers.left() == []
    assert state.status == "succeeded", state.error
    assert (checkout / "meta").is_dir()
    assert not (checkout / "meta").is_symlink()


EVIL_HOST_CONFIG = """\
[filter "evil"]
\tclean = {clean}; cat
\tsmudge = {smudge}; cat
\trequired = false
[diff "evil"]
\tcommand = {diff}
\ttextconv = {textconv}; cat
[merge "evil"]
\tdriver = {merge}
"""


async def test_gitattributes_cannot_reach_filters_or_drivers_the_host_configured(
    config: GolemConfig,
    engine: Engine,
    remote: Path,
    markers: Markers,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host_config = tmp_path / "host.gitconfig"
    names = ["clean", "smudge", "diff", "textconv", "merge"]
    host_config.write_text(EVIL_HOST_CONFIG.format(**{n: markers.touch(n) for n in names}))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(host_config))  # the host's own git config
    attack = (
        "printf '* filter=evil diff=evil merge=evil\\n' > .gitattributes && "
        "mkdir -p deep && printf '*.py filter=evil diff=evil\\n' > deep/.gitattributes && "
        "echo 'x = 1' > deep/mod.py"
    )
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {attack}")
    state, prs = await run_attack(config, engine, remote, model)
    assert state.status == "succeeded", state.error
    [pr] = prs
    assert "filter=evil" in pr.diff  # the attributes shipped as data, and ran nothing
    assert markers.left() == []
    # Control: the payload is live; git with the host's config, outside golem, runs it.
    copy = tmp_path / "control"
    clone = ["git", "clone", "-q", "-b", state.branch, str(remote), str(copy)]
    await asyncio.to_thread(subprocess.run, clone, check=True)
    assert "smudge" in markers.left()


async def test_a_run_lands_no_repository_of_the_boxs_making_under_another_name(
    config: GolemConfig, engine: Engine, remote: Path, markers: Markers, tmp_path: Path
) -> None:
    # A bare repository needs no .git name: HEAD, objects/ and refs/ make one, and git
    # run in that directory later takes its config (diff.external, hooks, ...) as its own.
    bare = (
        "mkdir -p tools/cache/objects/info tools/cache/refs/heads && "
        "printf 'ref: refs/heads/main\\n' > tools/cache/HEAD && "
        "touch tools/cache/objects/info/packs tools/cache/refs/heads/keep && "
        f"printf '[diff]\\n\\texternal = %s\\n' '{markers.touch('bare')}' > tools/cache/config"
    )
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {bare}")
    state, _ = await run_attack(config, engine, remote, model)
    checkout = Path(state.workspace)
    assert git_dirs_below(checkout) == [], state.error
    assert markers.left() == []
