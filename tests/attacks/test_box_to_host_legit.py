"""The other side of the box -> host rules: ordinary changes still cross. An edit, a
deleted file, a rename, a file turned into a directory and back, a new symlink inside the
tree (one pointing up but staying in), an executable bit, a hard-linked pair, an empty
file, an unusual name: a run ships them all, `golem agent` applies its regular files, and
``get_dir`` lands them, on bubblewrap, dockerd and Podman.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.sandbox import Engine
from tests.attacks.takeback_harness import (
    FIX_CALCULATOR,
    golem_agent,
    make_project,
    run_attack,
    scripted,
    snapshot,
)
from tests.blueprint.repos import git, make_remote
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP, SYNC_ON_SHARED_LOOP

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]

SEED = {
    "old.txt": "old\n",
    "tool.sh": "#!/bin/sh\necho tool\n",
    "dir/keep.txt": "keep\n",
    "becomes-dir": "a file for now\n",
    "gone-dir/a.txt": "a\n",
}

CHANGES = " && ".join(
    [
        FIX_CALCULATOR,
        "rm old.txt",
        "mv dir/keep.txt dir/kept.txt",
        "rm becomes-dir && mkdir becomes-dir && echo inside > becomes-dir/inside.txt",
        "rm -r gone-dir && echo 'a file now' > gone-dir",
        "ln -s calculator.py calc-link.py && ln -s ../calculator.py dir/up-link.py",
        "chmod +x tool.sh",
        "printf 'odd\\n' > 'with space é.txt'",
        "printf 'latin-1\\n' > \"$(printf 'caf\\351.txt')\"",  # a name that is no UTF-8
        "echo pair > h1 && ln h1 h2",
        "touch empty",
    ]
)


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every change crosses on bubblewrap, dockerd and Podman."""
    return str(request.param)


def seeded(root: Path) -> None:
    for name, text in SEED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def assert_changes_landed(root: Path) -> None:
    """What CHANGES made, as the host has it under ``root``."""
    assert "return a + b" in (root / "calculator.py").read_text()
    assert not (root / "old.txt").exists()
    assert (root / "dir/kept.txt").read_text() == "keep\n"
    assert not (root / "dir/keep.txt").exists()
    assert (root / "becomes-dir/inside.txt").read_text() == "inside\n"
    assert (root / "gone-dir").read_text() == "a file now\n"
    assert os.access(root / "tool.sh", os.X_OK)
    assert (root / "with space é.txt").read_text() == "odd\n"
    assert (root / os.fsdecode(b"caf\xe9.txt")).read_text() == "latin-1\n"
    assert (root / "h1").read_text() == (root / "h2").read_text() == "pair\n"
    assert (root / "empty").read_bytes() == b""


async def test_a_run_ships_every_ordinary_kind_of_change(
    config: GolemConfig, engine: Engine, reachable_dir: Path, tmp_path: Path
) -> None:
    remote = make_remote(reachable_dir)
    seed = reachable_dir / "calculator-seed"
    seeded(seed)
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "more files", cwd=seed)
    git("push", "-q", str(remote), "main", cwd=seed)
    state, _ = await run_attack(config, engine, remote, scripted(tmp_path, CHANGES))
    assert state.status == "succeeded", state.error
    checkout = Path(state.workspace)
    assert_changes_landed(checkout)
    assert os.readlink(checkout / "calc-link.py") == "calculator.py"
    assert os.readlink(checkout / "dir/up-link.py") == "../calculator.py"
    assert (checkout / "h1").stat().st_nlink == 1  # two files on the host, not one
    tree = git("ls-tree", "-r", state.branch, cwd=remote)
    modes = {line.split("\t")[1]: line.split()[0] for line in tree.splitlines()}
    assert modes["tool.sh"] == "100755"
    assert modes["calc-link.py"] == modes["dir/up-link.py"] == "120000"
    assert {"becomes-dir/inside.txt", "gone-dir", "dir/kept.txt", "empty"} <= set(modes)
    assert not {"old.txt", "becomes-dir", "gone-dir/a.txt", "dir/keep.txt"} & set(modes)


@SYNC_ON_SHARED_LOOP
def test_golem_agent_applies_every_ordinary_change_to_regular_files(
    backend: str, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    seeded(project)
    done = golem_agent(backend, tmp_path, project, CHANGES)
    assert done.returncode == 0, done.stderr
    assert_changes_landed(project)


async def test_get_dir_lands_links_inside_modes_and_empty_directories(
    engine: Engine, tmp_path: Path
) -> None:
    async with engine.session() as box:
        made = await box.execute(
            "mkdir -p t/a/b t/empty && echo x > t/a/b/f && printf '#!/bin/sh\\n' > t/run && "
            "chmod 755 t/run && chmod 600 t/a/b/f && ln -s a/b/f t/link && "
            "ln -s ../run t/a/up && chmod g+s t/a"  # a setgid directory lands as 0755
        )
        assert made.exit_code == 0, made.stderr_text
        landed = await box.get_dir("t", tmp_path / "t")
    root = tmp_path / "t"
    assert sorted(landed.paths) == ["a", "a/b", "a/b/f", "a/up", "empty", "link", "run"]
    assert snapshot(root) == {
        "a/b/f": b"x\n", "a/up": "-> ../run", "link": "-> a/b/f", "run": b"#!/bin/sh\n",
    }  # fmt: skip
    assert stat.S_IMODE((root / "run").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "a/b/f").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "a").stat().st_mode) == 0o755
    assert (root / "empty").is_dir()
