"""The dependency cache on its own: cache paths, the key's files read from git at the base
commit, least-recently-used eviction; and installs with the cache turned off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest
from golem.blueprint.book import RunBook
from golem.blueprint.dependencies import DependencyCache, cache_paths, kept_paths, key_files
from golem.checks import RepoConventions
from golem.core import ConfigError, GolemConfig, load_config
from golem.sandbox import Engine
from golem.store import SqlStore
from tests.blueprint.install_runs import python_repo, run
from tests.blueprint.repos import git


def conventions(**fields: object) -> RepoConventions:
    return RepoConventions.model_validate({"source": "test", **fields})


@pytest.mark.parametrize(
    "path", ["../outside", "/abs", ".git", "a/.git/b", ".GIT", "", "a/../../b", "."]
)
def test_a_cache_path_outside_the_repository_or_in_git_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="not a directory inside the repository"):
        cache_paths(conventions(cache=[path]))


@pytest.mark.parametrize(
    "path", ["/tmp/golem", "/tmp/golem/", "/tmp/golem/../etc", "/tmp/golemx/venv",
             "/tmp/golem/venv/.git", "/tmp/other", "/workspace/.venv"],
)  # fmt: skip
def test_outside_the_repository_a_cache_path_lies_beneath_golems_home_or_is_refused(
    path: str,
) -> None:
    assert cache_paths(conventions(cache=["/tmp/golem/venv", "/tmp/golem//cargo/"])) == [
        "/tmp/golem/venv", "/tmp/golem/cargo",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match=r"or golem's home \(/tmp/golem\)"):
        cache_paths(conventions(cache=[path]))


def test_cache_paths_are_normalised_once_each_and_an_install_needs_one() -> None:
    assert cache_paths(conventions(cache=["./.venv/", ".venv", "a//b"])) == [".venv", "a/b"]
    with pytest.raises(ConfigError, match=r"\[dependencies\] cache"):
        kept_paths(conventions(install=["npm ci"]))


def test_key_files_are_read_at_the_commit_not_from_the_checkout(tmp_path: Path) -> None:
    git("init", "-q", "-b", "main", cwd=tmp_path)
    (tmp_path / "requirements.txt").write_text("a==1\n")
    (tmp_path / "lock").symlink_to("/etc/hostname")
    git("add", "-A", cwd=tmp_path)
    git("commit", "-q", "-m", "one", cwd=tmp_path)
    first = key_files(tmp_path, ["requirements.txt", "lock", "missing.txt"])
    assert first["missing.txt"] == ""
    (tmp_path / "target").write_text("/etc/hostname")  # what a symlink's blob holds
    assert first["lock"] == git("hash-object", "target", cwd=tmp_path).strip()
    (tmp_path / "requirements.txt").write_text("a==2\n")  # not committed: not the base's
    committed = {"requirements.txt": first["requirements.txt"]}
    assert key_files(tmp_path, ["requirements.txt"]) == committed
    git("commit", "-q", "-am", "two", cwd=tmp_path)
    assert key_files(tmp_path, ["requirements.txt"]) != committed


def test_a_key_may_name_a_directory_or_a_pattern(tmp_path: Path) -> None:
    git("init", "-q", "-b", "main", cwd=tmp_path)
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "test.txt").write_text("a==1\n")
    (tmp_path / "requirements" / "docs.md").write_text("notes\n")
    git("add", "-A", cwd=tmp_path)
    git("commit", "-q", "-m", "one", cwd=tmp_path)
    names = ["requirements", "requirements/*.txt", "*.lock"]
    before = key_files(tmp_path, names)
    assert before["*.lock"] == ""
    assert all(before[name] for name in names[:2])
    (tmp_path / "requirements" / "docs.md").write_text("more notes\n")
    git("commit", "-q", "-am", "docs", cwd=tmp_path)
    after = key_files(tmp_path, names)
    assert after["requirements"] != before["requirements"]
    assert after["requirements/*.txt"] == before["requirements/*.txt"]
    (tmp_path / "requirements" / "test.txt").write_text("a==2\n")
    git("commit", "-q", "-am", "pin", cwd=tmp_path)
    assert key_files(tmp_path, names)["requirements/*.txt"] != before["requirements/*.txt"]


def test_the_least_recently_used_archives_are_evicted_first(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path), "dependencies": {"max_bytes": 250}}, files=[])
    cache = DependencyCache(config)
    cache.root.mkdir(parents=True)
    keys = [f"{n:064x}" for n in range(4)]
    for age, key in enumerate(keys):
        cache.path(key).write_bytes(b"x" * 100)
        os.utime(cache.path(key), (1000 + age, 1000 + age))
    stale, fresh = cache.root / ".golem-keep-dead", cache.root / ".golem-keep-writing"
    stale.write_bytes(b"x")
    os.utime(stale, (1000, 1000))
    fresh.write_bytes(b"x")
    assert cache.take(keys[0])  # used now: the most recent
    assert not cache.take(f"{9:064x}")
    assert cache.evict(keep=keys[3]) == [keys[1], keys[2]]
    assert sorted(p.name for p in cache.root.iterdir()) == [
        ".golem-keep-writing", f"{keys[0]}.tar", f"{keys[3]}.tar",
    ]  # fmt: skip


@pytest.mark.bwrap
async def test_with_the_cache_off_the_install_runs_in_the_runs_own_box(
    tmp_path: Path, engine: Engine, reachable_dir: Path
) -> None:
    config = load_config(
        {"state_dir": str(tmp_path / "state"), "dependencies": {"enabled": False}}, files=[]
    )
    store = await SqlStore.open(config)
    try:
        remote = python_repo(reachable_dir)
        offline = conventions(
            install=["python3 -m venv --without-pip .venv"],
            test=["test -x .venv/bin/python3", "python3 -m unittest test_calculator"],
            cache=[".venv"],
        )
        state = await run(config, engine, store, remote, offline)
    finally:
        await store.close()
    assert state.status == "succeeded", state.error
    assert [(r.name, r.passed) for r in state.prepared] == [("install", True)]
    assert (state.dependencies, state.dependencies_cached) == (None, False)
    assert not (config.state_dir / "cache" / "dependencies").exists()
    assert ".venv" not in git("show", "--stat", "--format=", state.branch, cwd=remote)


SETUP_ONLY = """\
name: setup-only
nodes:
  - id: prepare
    kind: host
    action: prepare
    next: setup
  - id: setup
    kind: box
    run: ["true"]
"""


@pytest.mark.bwrap
async def test_a_run_whose_archive_left_the_cache_says_to_start_again(
    tmp_path: Path, engine: Engine, reachable_dir: Path
) -> None:
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    blueprint = tmp_path / "setup-only.yaml"
    blueprint.write_text(SETUP_ONLY)
    store = await SqlStore.open(config)
    try:
        runner = Runner(config, engine=engine, store=store)
        request = RunRequest(repo=str(python_repo(reachable_dir)), task="t",
                             blueprint=str(blueprint))  # fmt: skip
        submitted = await runner.submit(request)
        book = RunBook(store)
        state = await book.load(submitted.id)
        assert state is not None
        state.conventions = conventions(install=["npm ci"], cache=["node_modules"])
        state.dependencies = "f" * 64  # installed once, since removed from the cache
        await book.save(state)
        ended = await runner.run(state.id)
    finally:
        await store.close()
    assert ended.status == "failed"
    assert ended.error is not None
    assert "are no longer in the cache" in ended.error
    assert "start the run again" in ended.error


BOX_FIRST = """\
name: box-first
nodes:
  - {id: prepare, kind: host, action: prepare, next: before}
  - {id: before, kind: box, run: ["test ! -e .venv"], next: install}
  - {id: install, kind: host, action: install, next: after}
  - {id: after, kind: box, run: ['test -f .venv/made', 'test -z "$(git status --short)"']}
"""


@pytest.mark.bwrap
async def test_a_box_made_before_the_install_gets_the_dependencies_too(
    config: GolemConfig, engine: Engine, reachable_dir: Path
) -> None:
    blueprint = reachable_dir / "box-first.yaml"
    blueprint.write_text(BOX_FIRST)
    store = await SqlStore.open(config)
    try:
        made = conventions(install=["mkdir -p .venv && touch .venv/made"], cache=[".venv"])
        remote = python_repo(reachable_dir)
        state = await run(config, engine, store, remote, made, blueprint=str(blueprint))
    finally:
        await store.close()
    assert [(s.node, s.outcome) for s in state.steps] == [
        ("prepare", "success"), ("before", "success"), ("install", "success"),
        ("after", "success"),
    ]  # fmt: skip
