"""Snapshots of a box: what a box wrote (files, installed dependencies) is there in a box
started from its snapshot, every such box works on a copy of its own, and snapshots are
content-addressed, read-only, listed and pruned. On bubblewrap, dockerd and Podman."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.core.errors import ConfigError, SessionNotFound, SnapshotUnsupported
from golem.core.spec import BoxSpec
from golem.sandbox import Engine, LocalEngine
from golem.sandbox.kept_trees import GONE_GRACE, drop_tree
from golem.sandbox.snapshots import SnapshotStore, check_snapshottable
from tests.sandbox.snapshotting import SNAPSHOT_BACKENDS, local, run

PREPARE = (
    "set -e; mkdir -p src && printf 'print(40 + 2)\\n' > src/app.py; "
    "python3 -m venv --without-pip /tmp/golem/venv; "
    "site=$(/tmp/golem/venv/bin/python -c "
    "\"import sysconfig; print(sysconfig.get_path('purelib'))\"); "
    'printf \'def hello():\\n    return "installed"\\n\' > "$site/greeting.py"; '
    "printf '#!/bin/sh\\necho built\\n' > tool && chmod 755 tool; "
    "echo home > /tmp/home/.profile-note; echo shared > /dev/shm/note"
)


@pytest.fixture(params=SNAPSHOT_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(config: GolemConfig, reachable_dir: Path) -> GolemConfig:
    """The state directory where boxes' host user reaches it: a process box binds its
    snapshot's kept tree from there."""
    return config.model_copy(update={"state_dir": reachable_dir / "state"})


async def test_files_and_installed_dependencies_survive_into_a_box_started_from_its_snapshot(
    engine: Engine,
) -> None:
    async with engine.session() as source:
        await run(source, PREPARE)
        taken = await local(engine).snapshot(source.id, "prepared")
    assert taken.roots == ["dev/shm", "tmp", "workspace"]
    async with engine.session({"snapshot": "prepared"}) as box:
        seen = await run(
            box,
            "python3 src/app.py; ./tool; cat /tmp/home/.profile-note /dev/shm/note; "
            "/tmp/golem/venv/bin/python -c 'import greeting; print(greeting.hello())'",
        )
    assert seen.split() == ["42", "built", "home", "shared", "installed"]


async def test_boxes_from_a_snapshot_a_fork_and_their_source_never_see_each_others_writes(
    engine: Engine, config: GolemConfig
) -> None:
    async with engine.session() as source:
        await run(source, "echo before > kept; echo gone > removed")
        taken = await local(engine).snapshot(source.id, "base")
        assert "dev/shm" not in taken.roots  # nothing in it: nothing to unpack
        digest = "sha256:" + _digest(engine, "base")
        await run(source, "rm removed; echo forked > kept; echo home > /tmp/home/note")
        fork = await local(engine).fork(source.id)
        async with (
            engine.session({"snapshot": "base"}) as first,
            engine.session({"snapshot": digest}) as second,
        ):
            await run(source, "echo source > kept; echo source > only-source")
            await run(first, "echo first > kept; echo first > only-first")
            await run(second, "echo second > only-second")
            await run(fork, "echo fork > only-fork; rm /tmp/home/note")
            views = {
                name: await run(box, "cat kept; ls; test -e /tmp/home/note || echo no-note")
                for name, box in (
                    ("source", source),
                    ("first", first),
                    ("second", second),
                    ("fork", fork),
                )
            }
        await engine.remove_session(fork.id)  # thrown away
        assert await run(source, "cat /tmp/home/note") == "home\n"
    assert views["source"].split() == ["source", "kept", "only-source"]
    assert views["first"].split() == ["first", "kept", "only-first", "removed", "no-note"]
    assert views["second"].split() == ["before", "kept", "only-second", "removed", "no-note"]
    assert views["fork"].split() == ["forked", "kept", "only-fork", "no-note"]
    assert [info.name for info in local(engine).snapshots.all()] == ["base"]
    left = {path.name for path in (config.state_dir / "snapshots").glob("*/objects/*")}
    assert left == {f"{taken.digest}.tar"}  # the fork's copy is not kept


def _digest(engine: Engine, name: str) -> str:
    [info] = [info for info in local(engine).snapshots.all() if info.name == name]
    return info.digest


async def test_snapshots_are_content_addressed_read_only_and_pruned_by_age_and_size(
    engine: Engine, config: GolemConfig
) -> None:
    async with engine.session() as source:
        await run(source, "echo same > file")
        one = await local(engine).snapshot(source.id, "one")
        two = await local(engine).snapshot(source.id, "two")
        await run(source, "echo other > file")
        three = await local(engine).snapshot(source.id, "three")
    assert one.digest == two.digest != three.digest
    objects = sorted((config.state_dir / "snapshots").glob("*/objects/*"))
    assert [path.name for path in objects] == sorted({f"{one.digest}.tar", f"{three.digest}.tar"})
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o400 for path in objects)
    [tenant] = (config.state_dir / "snapshots").iterdir()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tenant, *tenant.iterdir()]}
    assert {modes[tenant.name], modes["objects"], modes["names"]} == {0o711, 0o700}
    assert modes[tenant.name] == 0o711  # other users list no tenant's snapshots
    store = SnapshotStore(config.state_dir)
    assert [info.name for info in store.all()] == ["one", "two", "three"]
    assert store.prune(older_than=3600) == []
    kept_trees = 2 if config.engine.backend.type == "process" else 1  # and as much again
    removed = store.prune(max_bytes=three.size * kept_trees)
    assert [info.name for info in removed] == ["one", "two"]
    assert not (objects[0].parent / f"{one.digest}.tar").exists()
    assert [info.name for info in store.all()] == ["three"]
    assert [info.name for info in store.prune(older_than=0)] == ["three"]
    assert list((config.state_dir / "snapshots").glob("*/objects/*")) == []


async def test_a_name_taken_again_leaves_no_archive_behind(
    engine: Engine, config: GolemConfig
) -> None:
    async with engine.session() as source:
        await run(source, "echo one > file")
        first = await local(engine).snapshot(source.id, "moving")
        await local(engine).snapshot(source.id, "kept")  # the same content, another name
        await run(source, "echo two > file")
        second = await local(engine).snapshot(source.id, "moving")
        await run(source, "echo three > file")
        third = await local(engine).snapshot(source.id, "moving")
    objects = {path.name for path in (config.state_dir / "snapshots").glob("*/objects/*")}
    assert objects == {f"{first.digest}.tar", f"{third.digest}.tar"}  # "kept" holds first's
    assert second.digest not in {path.removesuffix(".tar") for path in objects}


def test_prune_removes_what_a_process_that_died_while_taking_a_snapshot_left(
    tmp_path: Path,
) -> None:
    tenant = tmp_path / "snapshots" / ("0" * 32)
    left = [tenant / "objects" / ".incoming-snap_1.tar", tenant / "names" / ".base.tmp_1"]
    fresh = tenant / "objects" / ".incoming-snap_2.tar"  # a snapshot being taken now
    for path in [*left, fresh]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    day_ago = time.time() - 86400 - 60
    for path in left:
        os.utime(path, (day_ago, day_ago))
    assert SnapshotStore(tmp_path).prune(older_than=3600) == []
    assert [path.exists() for path in [*left, fresh]] == [False, False, True]


def test_a_snapshot_is_refused_where_the_box_state_is_not_all_its_own(tmp_path: Path) -> None:
    with pytest.raises(SnapshotUnsupported, match="process, docker, gvisor and microvm"):
        check_snapshottable("a-backend-of-tomorrow", BoxSpec())
    with pytest.raises(SnapshotUnsupported, match="engine's images and containers"):
        check_snapshottable("microvm", BoxSpec(containers=True))
    with pytest.raises(SnapshotUnsupported, match="host directory"):
        check_snapshottable("process", BoxSpec(workspace=tmp_path))
    with pytest.raises(SnapshotUnsupported, match="writable root"):
        check_snapshottable("docker", BoxSpec(read_only_root=False))


@pytest.mark.parametrize("backend", ["process"])
def test_a_snapshot_reference_is_a_plain_name_or_a_digest(engine: Engine) -> None:
    digest = "sha256:" + "0" * 64
    for name in ["prepared", "main-2.1_x", digest, "x" * 63]:
        assert engine.spec(snapshot=name).snapshot == name
    for name in ["../other", "Upper", ".hidden", "a/b", "x" * 64, "sha256:zz", "a\n", ""]:
        with pytest.raises(ConfigError, match="snapshot: String should match pattern"):
            engine.spec(snapshot=name)


WARM_BACKENDS = [p for p in SNAPSHOT_BACKENDS if p.values[0] in ("process", "docker")]
"""Warm boxes from snapshots are the engine's, the same on every backend: tested on two."""


def warm_ids(engine: Engine) -> set[str]:
    """Ids of the engine's warm boxes from snapshots."""
    pool = local(engine).pool
    return {box.record.id for key in pool.warm_keys() for box in pool._warm[key].boxes}


@pytest.mark.parametrize("backend", WARM_BACKENDS)
async def test_a_session_from_a_snapshot_takes_a_warm_box_with_it_unpacked_and_one_refills(
    engine: Engine,
) -> None:
    await local(engine).start()  # long-lived, as a server's: it refills warm boxes
    async with engine.session() as source:
        await run(source, "echo kept > file; echo home > /tmp/home/note")
        await local(engine).snapshot(source.id, "warm")
    async with engine.session({"snapshot": "warm"}) as first:  # the snapshot copied in
        await run(first, "echo first > file")
    await local(engine).warm.settled()
    [warm] = warm_ids(engine)
    async with engine.session({"snapshot": "warm", "env": {"WHO": "second"}}) as box:
        assert box.id == warm  # taken: the snapshot was unpacked before the session asked
        seen = await run(box, "cat file /tmp/home/note; echo $WHO; echo mine > file")
        await local(engine).warm.settled()
        [refilled] = warm_ids(engine)
    assert seen.split() == ["kept", "home", "second"]
    assert refilled != warm
    async with engine.session({"snapshot": "warm"}) as box:
        assert box.id == refilled
        assert await run(box, "cat file") == "kept\n"  # a copy of its own, as any box's


@pytest.mark.parametrize("backend", WARM_BACKENDS)
async def test_a_snapshot_taken_again_or_pruned_drains_its_warm_boxes(
    engine: Engine, config: GolemConfig
) -> None:
    await local(engine).start()  # long-lived, as a server's: it refills warm boxes
    alpha = {"labels": {"golem.tenant": "alpha"}}
    async with engine.session(alpha) as source:
        await run(source, "echo first > file")
        await local(engine).snapshot(source.id, "moving")
        async with engine.session({**alpha, "snapshot": "moving"}):
            pass
        await local(engine).warm.settled()
        [old] = warm_ids(engine)
        await run(source, "echo second > file")
        await local(engine).snapshot(source.id, "moving")
        await local(engine).warm.settled()
        [new] = warm_ids(engine)
    assert new != old
    assert old not in {info.id for info in await engine.boxes()}  # stopped, not pooled
    async with engine.session({**alpha, "snapshot": "moving"}) as box:
        assert box.id == new
        assert await run(box, "cat file") == "second\n"
    await local(engine).warm.settled()
    [kept] = warm_ids(engine)
    SnapshotStore(config.state_dir).prune(older_than=0)  # `golem snapshots prune`
    await local(engine).reap()
    assert warm_ids(engine) == set()
    assert kept not in {info.id for info in await engine.boxes()}


@pytest.mark.parametrize("backend", ["process"])
async def test_warm_boxes_from_snapshots_are_bounded_per_snapshot_and_in_all(
    config: GolemConfig,
) -> None:
    pool = config.engine.pool.model_copy(update={"snapshot_boxes": 2, "max_snapshot_boxes": 3})
    bounded = config.model_copy(update={"engine": config.engine.model_copy(update={"pool": pool})})
    async with LocalEngine(bounded) as engine:
        await engine.start()  # long-lived, as a server's: it refills warm boxes
        async with engine.session() as source:
            for name in ("one", "two"):
                await run(source, f"echo {name} > file")
                await engine.snapshot(source.id, name)
        for name in ("one", "two"):
            async with engine.session({"snapshot": name}):
                pass
            await engine.warm.settled()
        per_key = sorted(len(engine.pool._warm[key].boxes) for key in engine.pool.warm_keys())
        assert per_key == [1, 2]
    assert LocalEngine(bounded).registry.all() == []  # closing stopped every warm box


NESTED_REPOSITORIES = (
    "set -e; mkdir -p vendor/lib/.git/refs sub /tmp/home/tool/.Git; "
    "echo 'ref: refs/heads/main' > vendor/lib/.git/HEAD; echo code > vendor/lib/lib.py; "
    "echo 'gitdir: ../.git/modules/sub' > sub/.git; echo cache > /tmp/home/tool/.Git/config; "
    "echo mine > golem-escaped~.git; echo also-mine > vendor/golem-escaped~x"
)
NESTED_VIEW = (
    "cat vendor/lib/.git/HEAD vendor/lib/lib.py sub/.git /tmp/home/tool/.Git/config "
    "golem-escaped~.git vendor/golem-escaped~x; ls -A vendor/lib sub /tmp/home/tool"
)


@pytest.mark.parametrize(
    "backend", [p for p in SNAPSHOT_BACKENDS if p.values[0] in ("process", "docker")]
)
async def test_a_fork_of_a_tree_holding_nested_repositories_carries_their_git_and_never_writes_back(
    engine: Engine, config: GolemConfig
) -> None:
    with pytest.raises(SessionNotFound):
        await local(engine).fork("box-none")
    async with engine.session() as source:
        await run(source, NESTED_REPOSITORIES)
        before = await run(source, NESTED_VIEW)
        fork = await local(engine).fork(source.id)
        try:
            forked = await run(fork, NESTED_VIEW)
            await run(fork, "echo fork > vendor/lib/.git/HEAD; rm sub/.git; echo f > sub/.git2")
            after = await run(source, NESTED_VIEW)
        finally:
            await engine.remove_session(fork.id)
    assert forked == before == after
    assert before.split()[:6] == [
        "ref:",
        "refs/heads/main",
        "code",
        "gitdir:",
        "../.git/modules/sub",
        "cache",
    ]
    assert {".git", ".Git"} <= set(before.split())
    assert list((config.state_dir / "snapshots").glob("*/objects/*")) == []  # nothing kept


@pytest.mark.parametrize("backend", ["process"])
async def test_an_engine_prewarmed_for_a_snapshot_has_its_warm_box_before_any_session(
    config: GolemConfig,
) -> None:
    async with LocalEngine(config) as maker, maker.session() as source:
        await run(source, "echo kept > file")
        await maker.snapshot(source.id, "warm")
    async with LocalEngine(config) as engine:
        await engine.start(prewarm=True, specs=[engine.spec(snapshot="warm")])
        [warm] = warm_ids(engine)
        async with engine.session({"snapshot": "warm"}) as box:
            assert box.id == warm
            assert await run(box, "cat file") == "kept\n"


@pytest.mark.parametrize("backend", ["process"])
async def test_closing_an_engine_while_warm_boxes_are_filled_leaves_no_box(
    config: GolemConfig,
) -> None:
    async with LocalEngine(config) as engine:
        async with engine.session() as source:
            await run(source, "echo kept > file")
            info = await engine.snapshot(source.id, "warm")
        engine.warm.refill(engine.spec(snapshot="warm"), info)  # under way as the engine closes
        assert engine.pool.warm_keys() != []
    assert LocalEngine(config).registry.all() == []


@pytest.mark.parametrize("backend", ["process"])
async def test_a_process_snapshot_is_kept_as_a_tree_boxes_copy_and_pruned_with_it(
    engine: Engine, config: GolemConfig
) -> None:
    async with engine.session() as source:
        await run(source, PREPARE + "; ln -s src/app.py entry")
        taken = await local(engine).snapshot(source.id, "prepared")
    snapshots = config.state_dir / "snapshots"
    [tree] = snapshots.glob(f"*/trees/{taken.digest}")
    assert (tree / "workspace/src/app.py").read_text() == "print(40 + 2)\n"
    assert (tree / "dev/shm/note").read_text() == "shared\n"
    assert not (tree / "workspace/entry").is_symlink()  # a link is data the box makes
    shutil.rmtree(tree)  # as a snapshot taken before trees were kept
    for _ in range(2):  # the first box keeps the tree again, the second finds it
        async with engine.session({"snapshot": "prepared"}) as box:
            seen = await run(
                box,
                "python3 entry; readlink entry; cat /dev/shm/note; stat -c %a /tmp /workspace; "
                "/tmp/golem/venv/bin/python -c 'import greeting; print(greeting.hello())'",
            )
        assert seen.split() == ["42", "src/app.py", "shared", "1777", "755", "installed"]
        assert tree.is_dir()
    store = SnapshotStore(config.state_dir)
    assert store.prune(max_bytes=2 * taken.size - 1) == [taken]  # the tree counts as much again
    [gone] = snapshots.glob("*/trees/*")  # off its name, deleted after a grace
    assert gone.name.startswith(".gone-")
    drop_tree(gone.parent.parent, "none", now=time.time() + GONE_GRACE + 1)
    assert list(snapshots.glob("*/trees/*")) == []


@pytest.mark.parametrize("backend", ["process"])
async def test_a_link_whose_name_is_not_utf8_is_kept_in_the_tree_and_made_again(
    engine: Engine, config: GolemConfig
) -> None:
    async with engine.session() as source:
        await run(source, "ln -s target \"$(printf 'link-\\377')\"")
        taken = await local(engine).snapshot(source.id, "bytes")
    async with engine.session({"snapshot": "bytes"}) as box:
        seen = await run(box, "readlink \"$(printf 'link-\\377')\"")
    assert seen == "target\n"
    objects = list((config.state_dir / "snapshots").glob("*/objects/*.tar"))
    assert [path.stem for path in objects] == [taken.digest]


@pytest.mark.parametrize("backend", ["process"])
async def test_an_engine_not_started_for_a_long_life_fills_no_warm_box_after_a_session(
    engine: Engine,
) -> None:
    async with engine.session() as source:
        await run(source, "echo kept > file")
        await local(engine).snapshot(source.id, "once")
    async with engine.session({"snapshot": "once"}) as box:  # as `golem run`'s engine
        assert await run(box, "cat file") == "kept\n"
    await local(engine).warm.settled()
    assert warm_ids(engine) == set()
    assert local(engine).pool.warm_keys() == []
