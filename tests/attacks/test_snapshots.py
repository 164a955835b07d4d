"""Attacker suite, snapshots: a box whose writable trees hold what must never cross (a
setuid, setgid or sticky file, a FIFO, a socket, a device node, a huge sparse file, links
out, hard links) is frozen into a snapshot. Whatever it plants, the host keeps no such
file (nothing of it, when a rule refuses the snapshot: no archive, no spool, no name), and
a box started from the snapshot gets none of it. A snapshot is found only by its own
tenant: another tenant naming it, by name or digest, is refused as if it did not exist.
On bubblewrap, dockerd and Podman."""

from __future__ import annotations

import os
import stat
import tarfile
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.core.errors import PolicyViolation, SnapshotNotFound, UnsafeBoxOutput
from golem.sandbox import Engine, RemoteEngine
from golem.sandbox.hosttree import is_git_name
from golem.sandbox.snapshots import SnapshotInfo
from tests.sandbox.snapshotting import SNAPSHOT_BACKENDS, local, run
from tests.service.served import serving

PLANTED = {
    "setuid-program": ("cp /bin/sh rootshell && chmod 4755 rootshell", "takeback.mode"),
    "setgid-program": ("cp /bin/sh /tmp/groupshell && chmod 2755 /tmp/groupshell", "takeback.mode"),
    "sticky-file": ("echo x > /dev/shm/sticky && chmod 1755 /dev/shm/sticky", "takeback.mode"),
    "fifo": ("mkfifo /tmp/home/pipe", "takeback.kind"),
    "huge-sparse-file": ("truncate -s 64G /tmp/huge", "takeback.size"),
    "git-directory": (
        "mkdir -p repo/.Git/hooks && printf '#!/bin/sh\\nid\\n' > repo/.Git/hooks/post-checkout",
        "takeback.git",
    ),
}


@pytest.fixture(params=SNAPSHOT_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(config: GolemConfig, reachable_dir: Path) -> GolemConfig:
    """The state directory where boxes' host user reaches it: a process box binds its
    snapshot's kept tree from there."""
    return config.model_copy(update={"state_dir": reachable_dir / "state"})


def kept_files(config: GolemConfig) -> list[str]:
    """Every file beneath the snapshots' directory (directories aside)."""
    root = config.state_dir / "snapshots"
    return (
        sorted(str(path.relative_to(root)) for path in root.rglob("*") if not path.is_dir())
        if root.exists()
        else []
    )


def no_links_or_special_files(root: Path) -> bool:
    """Whether everything beneath ``root`` is a plain directory or a plain, read-only file."""
    for path in root.rglob("*"):
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return False
        if mode & 0o7000:
            return False
    return True


def members(config: GolemConfig, info: SnapshotInfo) -> dict[str, tarfile.TarInfo]:
    [archive] = (config.state_dir / "snapshots").glob(f"*/objects/{info.digest}.tar")
    with tarfile.open(archive) as tar:
        return {member.name: member for member in tar.getmembers()}


@pytest.mark.parametrize("attack", list(PLANTED))
async def test_a_box_planting_a_special_file_anywhere_it_writes_gets_no_snapshot(
    attack: str, config: GolemConfig, engine: Engine
) -> None:
    command, rule = PLANTED[attack]
    async with engine.session() as box:
        await run(box, "echo fine > ok")
        await run(box, command)
        with pytest.raises(UnsafeBoxOutput) as refused:
            await local(engine).snapshot(box.id, "planted")
    assert refused.value.rule == rule
    assert kept_files(config) == []  # no archive, no spool, no half-written name
    with pytest.raises(SnapshotNotFound):
        await engine.create_session({"snapshot": "planted"})


async def test_a_device_node_or_socket_never_reaches_a_snapshot_nor_the_next_box(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session() as box:
        await run(box, f"python3 -c {BIND_SOCKET!r}")
        made = await box.execute("mknod null c 1 3 && mknod /tmp/disk b 8 0")
        if made.exit_code == 0:  # a box that could make one: its snapshot is refused whole
            with pytest.raises(UnsafeBoxOutput, match=r"takeback\.kind"):
                await local(engine).snapshot(box.id, "devices")
            assert kept_files(config) == []
            return
        info = await local(engine).snapshot(box.id, "devices")
    kinds = [m.type for m in members(config, info).values()]
    assert set(kinds) <= {tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE}
    assert "workspace/sock" not in members(config, info)
    async with engine.session({"snapshot": "devices"}) as box:
        found = await run(box, "find /workspace /tmp /dev/shm ! -type f ! -type d ! -type l")
    assert found == ""


BIND_SOCKET = "import socket; socket.socket(socket.AF_UNIX).bind('sock')"


async def test_links_out_stay_data_the_host_never_follows_or_holds(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session() as box:
        await run(
            box,
            "ln -s /etc/passwd out && ln -s ../../../../etc up && ln -s / /tmp/root && "
            "ln -s /proc/1/environ /dev/shm/environ && mkdir d && ln -s /etc d/inner",
        )
        info = await local(engine).snapshot(box.id, "links")
    assert no_links_or_special_files(config.state_dir / "snapshots")
    kept = members(config, info)
    links = {name: m.linkname for name, m in kept.items() if m.issym()}
    assert links == {
        "workspace/out": "/etc/passwd",
        "workspace/up": "../../../../etc",
        "tmp/root": "/",
        "dev/shm/environ": "/proc/1/environ",
        "workspace/d/inner": "/etc",
    }
    assert all(kept[name].size == 0 for name in links)  # no byte of what they name was read
    passwd_head = Path("/etc/passwd").read_bytes()[:32]
    [archive] = (config.state_dir / "snapshots").glob(f"*/objects/{info.digest}.tar")
    assert passwd_head not in archive.read_bytes()
    async with engine.session({"snapshot": "links"}) as box:
        seen = await run(box, "readlink out up /tmp/root /dev/shm/environ d/inner")
    assert seen.split() == ["/etc/passwd", "../../../../etc", "/", "/proc/1/environ", "/etc"]


async def test_a_hard_link_is_carried_as_a_copy_of_its_own_never_as_a_link(
    config: GolemConfig, engine: Engine
) -> None:
    host_file = Path("/usr/bin/env")
    links_before = host_file.stat().st_nlink
    async with engine.session() as box:
        await run(box, f"echo data > a && ln a b; ln {host_file} env 2>/dev/null; true")
        info = await local(engine).snapshot(box.id, "hardlinks")
    assert host_file.stat().st_nlink == links_before
    kept = members(config, info)
    assert not any(m.islnk() for m in kept.values())
    assert kept["workspace/b"].isreg()
    async with engine.session({"snapshot": "hardlinks"}) as box:
        links = "import os; print(*(os.stat(n).st_nlink for n in 'ab'))"  # gVisor has no statx
        seen = await run(box, f'echo changed > b; cat a; python3 -c "{links}"')
    assert seen.split() == ["data", "1", "1"]
    assert host_file.stat().st_nlink == links_before


def tenant(name: str, **spec: object) -> dict[str, object]:
    return {"labels": {"golem.tenant": name}, **spec}


@pytest.mark.parametrize("backend", ["process"])
async def test_one_tenants_snapshot_is_never_found_by_another_tenant(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session(tenant("alpha")) as box:
        await run(box, "echo alpha-secret > secret")
        info = await local(engine).snapshot(box.id, "prepared")
    digest = f"sha256:{info.digest}"
    for other in (tenant("beta"), {}, tenant("alpha ")):
        for name in ("prepared", digest):
            with pytest.raises(SnapshotNotFound, match="has no snapshot"):
                await engine.create_session({**other, "snapshot": name})
    async with engine.session(tenant("beta")) as box:
        await run(box, "echo beta > secret")
        await local(engine).snapshot(box.id, "prepared")  # beta's own, beside alpha's
    async with engine.session(tenant("alpha", snapshot="prepared")) as box:
        assert await run(box, "cat secret") == "alpha-secret\n"
    with pytest.raises(SnapshotNotFound):
        await engine.create_session(tenant("beta", snapshot=digest))
    assert len(os.listdir(config.state_dir / "snapshots")) == 2  # a directory per tenant


@pytest.mark.parametrize("backend", ["process"])
async def test_through_the_server_a_key_finds_only_its_own_tenants_snapshots(
    tmp_path: Path, config: GolemConfig
) -> None:
    policy = '[server.policies.user]\nmax_snapshot_bytes = "64k"\n'
    with serving(tmp_path / "served", config=policy) as served:
        async with RemoteEngine(served.url, served.key("alpha"), config=config) as alpha:
            async with alpha.session() as box:
                await run(box, "echo alpha-secret > secret")
                info = await alpha.snapshot(box.id, "prepared")
                with served.client(served.key("beta")) as beta:
                    taken = beta.post(f"/v1/sessions/{box.id}/snapshot", json={"name": "mine"})
                    assert taken.status_code == 404, taken.text  # alpha's session
                    for name in ("prepared", f"sha256:{info.digest}"):
                        refused = beta.post("/v1/sessions", json={"spec": {"snapshot": name}})
                        assert refused.status_code == 404, refused.text
                        assert "has no snapshot" in refused.json()["detail"]
                    claimed = beta.post(
                        "/v1/sessions", json={"spec": {"snapshot": "prepared", **tenant("alpha")}}
                    )
                    assert claimed.status_code == 403, claimed.text  # golem.* are the server's
                    assert beta.get("/v1/sessions").json() == []
                await run(box, "head -c 100000 /dev/urandom > big")
                with pytest.raises(PolicyViolation, match="max_snapshot_bytes"):
                    await alpha.snapshot(box.id, "prepared")  # past the role's cap: 403
            assert info.tenant == "alpha"
            async with alpha.session({"snapshot": "prepared"}) as box:
                assert await run(box, "cat secret") == "alpha-secret\n"


@pytest.mark.parametrize("backend", ["process"])
async def test_a_tenant_past_its_snapshot_bytes_loses_its_oldest_and_never_grows_past_them(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session(tenant("alpha")) as box:
        sizes = {}
        for name in ("first", "second", "third"):
            await run(box, f"rm -f /workspace/*; head -c 20000 /dev/urandom > {name}")
            sizes[name] = (await local(engine).snapshot(box.id, name)).size
        cap = 2 * (sizes["second"] + sizes["third"]) + 1024  # a kept tree counts as its archive
        await run(box, "rm -f /workspace/*; head -c 20000 /dev/urandom > fourth")
        fourth = await local(engine).snapshot(box.id, "fourth", max_tenant_bytes=cap)
        await run(box, "head -c 200000 /dev/urandom > huge")
        with pytest.raises(PolicyViolation, match="max_snapshot_bytes"):
            await local(engine).snapshot(box.id, "fourth", max_tenant_bytes=cap)
    kept = local(engine).snapshots.all()
    assert [info.name for info in kept] == ["third", "fourth"]
    assert sum(2 * info.size for info in kept) <= cap
    assert [info.digest for info in kept if info.name == "fourth"] == [fourth.digest]
    objects = {path.stem for path in (config.state_dir / "snapshots").glob("*/objects/*")}
    assert objects == {info.digest for info in kept}  # the refused one left no archive


async def test_a_pooled_box_that_started_from_a_snapshot_hands_none_of_it_to_another_tenant(
    engine: Engine, backend: str
) -> None:
    async with engine.session(tenant("alpha")) as box:
        await run(box, "echo alpha-secret > secret; echo alpha > /tmp/home/note")
        await local(engine).snapshot(box.id, "prepared")
    async with engine.session(tenant("alpha", snapshot="prepared")) as box:
        assert await run(box, "cat secret") == "alpha-secret\n"
        reused = box.id
    async with engine.session(tenant("beta")) as box:
        if backend == "process":  # bound its kept tree: stopped, never pooled
            assert box.id != reused
        else:
            assert box.id == reused  # the same box, wiped back into the pool
        left = await run(box, "ls -A /workspace /dev/shm; find /tmp -type f")
    assert "secret" not in left
    assert "note" not in left


@pytest.mark.parametrize("backend", [p for p in SNAPSHOT_BACKENDS if p.values[0] == "process"])
async def test_a_tenants_warm_box_never_serves_another_tenant_even_for_the_same_content(
    engine: Engine,
) -> None:
    await local(engine).start()  # long-lived, as a server's: it refills warm boxes
    for name in ("alpha", "beta"):  # the same files: one digest, two tenants' snapshots
        async with engine.session(tenant(name)) as box:
            # one mtime for both: written a second apart, they would be two contents
            await run(box, "echo shared-content > file && touch -d @1000000000 file .")
            await local(engine).snapshot(box.id, "prepared")
    async with engine.session(tenant("alpha", snapshot="prepared")):
        pass
    await local(engine).warm.settled()
    pool = local(engine).pool
    [(owner, _, digest)] = pool.warm_keys()
    [alphas] = (group.boxes for group in pool._warm.values())
    [warm] = [box.record.id for box in alphas]
    others = [
        tenant("beta", snapshot="prepared"),
        tenant("beta", snapshot=f"sha256:{digest}"),
        tenant("alpha ", snapshot="prepared"),  # not alpha: no snapshot at all
        tenant("alpha", snapshot="prepared", memory="300m"),  # alpha, another shape
    ]
    for spec in others:
        try:
            async with engine.session(spec) as box:
                assert box.id != warm
                assert await run(box, "cat file") == "shared-content\n"
        except SnapshotNotFound:
            assert spec["labels"] == {"golem.tenant": "alpha "}
        assert warm in local(engine).pool.ids()  # still alpha's, untouched
    async with engine.session(tenant("alpha", snapshot="prepared")) as box:
        assert box.id == warm
        assert box.spec.labels == {"golem.tenant": "alpha"}
    assert owner == "alpha"


TAMPER = (
    # everything the box can see of its snapshot: the kept tree bound in it, and its copy
    "cd /; for path in $(find /run/golem-snapshot /workspace /tmp/home /dev/shm -mindepth 1 "
    "-depth); do echo tampered >> $path; chmod 0777 $path; ln $path $path.hard; "
    "ln -s /etc/passwd $path.sym; mv $path $path.moved; rm -rf $path.moved; done; "
    "touch /run/golem-snapshot/new /run/golem-snapshot/workspace/new; "
    "mount -o remount,rw /run/golem-snapshot; true"
)
VIEW = (
    "cd /; find /workspace /tmp/home /dev/shm -mindepth 1 -printf '%p %m %y %l\\n' | sort; "
    "find /workspace /tmp/home /dev/shm -type f -exec md5sum {} + | sort"
)


def tree_listing(tree: Path) -> list[tuple[str, int, int, bytes]]:
    return sorted(
        (str(path.relative_to(tree)), path.lstat().st_mode, path.lstat().st_nlink, data)
        for path in tree.rglob("*")
        for data in [path.read_bytes() if path.is_file() and not path.is_symlink() else b""]
    )


@pytest.mark.parametrize("backend", ["process"])
async def test_a_box_tampering_with_everything_it_sees_of_its_kept_tree_reaches_no_other_box(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session(tenant("alpha")) as box:
        await run(
            box,
            "mkdir -p pkg/sub && echo code > pkg/sub/mod.py && chmod 755 pkg/sub/mod.py && "
            "echo home > /tmp/home/note && echo shm > /dev/shm/note && ln -s pkg/sub link",
        )
        info = await local(engine).snapshot(box.id, "prepared")
    [tree] = (config.state_dir / "snapshots").glob(f"*/trees/{info.digest}")
    before = tree_listing(tree)
    assert tree.stat().st_uid == os.geteuid()  # golem's, never the box's user
    async with engine.session(tenant("alpha", snapshot="prepared")) as box:
        original = await run(box, VIEW)
        mounted = await run(box, "grep ' /run/golem-snapshot ' /proc/mounts")
        assert " ro," in mounted
        assert await run(box, "cat /run/golem-snapshot/workspace/pkg/sub/mod.py") == "code\n"
        await run(box, TAMPER)
        tampered = await run(box, VIEW)
        used = box.id
    assert "tampered" not in original
    assert tampered != original  # the box's own copy took the writes
    assert tree_listing(tree) == before
    assert no_links_or_special_files(tree)  # its links are data the box makes
    async with engine.session(tenant("alpha", snapshot="prepared")) as box:
        assert await run(box, VIEW) == original
        assert box.id != used
    async with engine.session(tenant("beta")) as box:  # a box of the same shape: not that one
        assert box.id != used
        listed = await run(box, "ls /run/golem-snapshot 2>&1 || true")
    assert listed.endswith("No such file or directory\n")


@pytest.mark.parametrize("backend", ["process"])
async def test_a_forks_copy_holds_no_git_name_on_the_host_and_refuses_what_a_snapshot_does(
    config: GolemConfig, engine: Engine
) -> None:
    async with engine.session() as box:
        await run(
            box,
            "mkdir -p a/.git/hooks a/.GIT. /tmp/GIT~1 && echo x > a/.git/hooks/post-checkout && "
            "echo y > 'a/.GIT./config' && echo z > /tmp/GIT~1/HEAD && echo w > golem-escaped~",
        )
        snapshots = local(engine).snapshots
        async with snapshots.held(box, backend="process") as held:
            with tarfile.open(held.path) as tar:
                names = [part for m in tar.getmembers() for part in m.name.split("/")]
        assert names
        assert not any(is_git_name(name) for name in names)
        for planted, rule in (
            ("ln -s a/.git/config link", "takeback.link"),
            ("cp /bin/sh a/.git/shell && chmod 4755 a/.git/shell", "takeback.mode"),
        ):
            async with engine.session() as other:
                await run(other, "mkdir -p a/.git && " + planted)
                with pytest.raises(UnsafeBoxOutput) as refused:
                    await local(engine).fork(other.id)
                assert refused.value.rule == rule
                assert sorted(b.id for b in await engine.boxes()) == sorted([box.id, other.id])
    assert kept_files(config) == []
