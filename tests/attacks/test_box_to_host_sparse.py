"""Attacker suite, box -> host: sparse files. A box that can hold 64 MiB (``memory =
"64m"``: its tmpfs counts against it) makes a file whose size says far more (``truncate -s
256M``); the host must not write what the box never had to hold. A file whose size passes
what the box could hold is refused (``takeback.size``); one within it lands with its runs of
zeros as holes: in a run's checkout, in `golem agent`'s directory, beneath ``get_dir``'s
destination and in the dependency cache's archive. Measured in blocks the host allocated
(``st_blocks``), not in apparent size, on bubblewrap, dockerd and Podman.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golem.blueprint.workspace import copy_into_box, take_back
from golem.core import UnsafeBoxOutput
from golem.forge import GitRepo
from golem.sandbox import Engine
from golem.sandbox.keep import keep_archive
from golem.sandbox.takeback import TakebackLimits
from tests.attacks.takeback_harness import (
    EXAMPLES,
    allocated,
    golem_agent,
    listing,
    make_project,
    rule_of,
    temporary_left,
)
from tests.blueprint.repos import git
from tests.conftest import BOTH_BACKENDS, QUICK_START_BACKENDS, SHARED_LOOP, SYNC_ON_SHARED_LOOP

MiB = 1024 * 1024
BOX_MEMORY = "64m"
WITHIN = 48 * MiB
"""A sparse file's size the box could hold (it holds a few bytes of it)."""
PAST = "256M"
"""A sparse file's size past anything the box could hold (and not over max_file_bytes)."""
MOST_ALLOCATED = 4 * MiB
"""What landing a file of a few bytes and many zeros may cost the host's disk at most."""

SPARSE = (
    f"truncate -s {WITHIN} {{path}} && "
    "printf 'box data' | dd of={path} bs=1 seek=1000000 conv=notrunc status=none"
)
"""A file of WITHIN bytes, all zeros but 8 bytes at 1,000,000 (the box holds one block)."""

pytestmark = SHARED_LOOP


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


def assert_sparse_copy(path: Path) -> None:
    """``path`` holds what SPARSE made (its bytes and size), in few blocks."""
    assert path.stat().st_size == WITHIN
    assert allocated(path) < MOST_ALLOCATED, f"{allocated(path) >> 20} MiB allocated"
    with path.open("rb") as handle:
        handle.seek(1000000 - 8)
        assert handle.read(24) == b"\0" * 8 + b"box data" + b"\0" * 8
        handle.seek(0)
        zeros = sum(chunk.count(0) for chunk in iter(lambda: handle.read(MiB), b""))
    assert zeros == WITHIN - len(b"box data")


def checkout_of(parent: Path) -> Path:
    checkout = parent / "checkout"
    shutil.copytree(EXAMPLES / "calculator", checkout)
    git("init", "-q", "-b", "main", cwd=checkout)
    git("add", "-A", cwd=checkout)
    git("commit", "-q", "-m", "seed", cwd=checkout)
    return checkout


async def test_a_runs_sparse_file_lands_sparse_and_one_past_the_box_is_refused(
    engine: Engine, reachable_dir: Path
) -> None:
    checkout = checkout_of(reachable_dir)
    async with engine.session(engine.spec(memory=BOX_MEMORY)) as box:
        layout = await copy_into_box(box, checkout)
        made = await box.execute(SPARSE.format(path="sparse.bin"))
        assert made.exit_code == 0, made.stderr_text
        repo = GitRepo(checkout, check_config=False)
        await take_back(box, checkout, layout, repo=repo)
        assert_sparse_copy(checkout / "sparse.bin")
        before = listing(checkout)
        made = await box.execute(f"truncate -s {PAST} huge.bin && echo more >> README.md")
        assert made.exit_code == 0, made.stderr_text
        with pytest.raises(UnsafeBoxOutput) as got:
            await take_back(box, checkout, layout, repo=repo)
    assert got.value.rule == "takeback.size", str(got.value)
    assert listing(checkout) == before


async def test_get_dir_lands_a_sparse_file_sparse_and_refuses_one_past_the_box(
    engine: Engine, tmp_path: Path
) -> None:
    async with engine.session(engine.spec(memory=BOX_MEMORY)) as box:
        made = await box.execute(f"mkdir d && {SPARSE.format(path='d/sparse.bin')}")
        assert made.exit_code == 0, made.stderr_text
        await box.get_dir("d", tmp_path / "landed")
        assert_sparse_copy(tmp_path / "landed" / "sparse.bin")
        await box.execute(f"mkdir e && truncate -s {PAST} e/huge.bin")
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.get_dir("e", tmp_path / "refused")
    assert got.value.rule == "takeback.size", str(got.value)
    assert list((tmp_path / "refused").iterdir()) == []


async def test_the_dependency_cache_keeps_a_sparse_file_cheaply_and_refuses_one_past_the_box(
    engine: Engine, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    async with engine.session(engine.spec(memory=BOX_MEMORY)) as box:
        made = await box.execute(f"mkdir .venv && {SPARSE.format(path='.venv/sparse.bin')}")
        assert made.exit_code == 0, made.stderr_text
        limits = TakebackLimits.of(box.spec)
        kept = await keep_archive(
            box.stream_archive("/workspace", paths=[".venv"]),
            cache / "kept.tar",
            limits,
            within=[".venv"],
        )
        assert kept.found == [".venv"]
        assert (cache / "kept.tar").stat().st_size > WITHIN
        assert allocated(cache / "kept.tar") < MOST_ALLOCATED
        await box.execute(f"mkdir node_modules && truncate -s {PAST} node_modules/huge.bin")
        with pytest.raises(UnsafeBoxOutput) as got:
            await keep_archive(
                box.stream_archive("/workspace", paths=["node_modules"]),
                cache / "refused.tar",
                limits,
                within=["node_modules"],
            )
    assert got.value.rule == "takeback.size", str(got.value)
    assert sorted(p.name for p in cache.iterdir()) == ["kept.tar"]  # no spool or part left


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
@SYNC_ON_SHARED_LOOP
def test_golem_agent_lands_a_sparse_file_sparse_in_the_users_directory(
    backend: str, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    done = golem_agent(
        backend, tmp_path, project, SPARSE.format(path="sparse.bin"), flags=("--memory", "64m")
    )
    assert done.returncode == 0, done.stderr
    assert_sparse_copy(project / "sparse.bin")
    assert temporary_left(tmp_path) == []


@SYNC_ON_SHARED_LOOP
def test_golem_agent_refuses_a_sparse_file_past_what_the_box_could_hold(
    backend: str, tmp_path: Path
) -> None:
    project = make_project(tmp_path)
    before = listing(project)
    done = golem_agent(
        backend, tmp_path, project, f"truncate -s {PAST} huge.bin && echo more >> README.md",
        flags=("--memory", "64m"),
    )  # fmt: skip
    assert done.returncode != 0
    assert rule_of(done.stderr) == "takeback.size", done.stderr
    assert listing(project) == before
    assert temporary_left(tmp_path) == []
