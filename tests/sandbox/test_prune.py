"""Boxes whose owner process was killed are found and removed by prune (API and CLI), on
bubblewrap and on gVisor (whose runsc, gofer and sandbox outlive a killed owner)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.sandbox import Engine, LocalEngine
from golem.sandbox.records import BoxRecord, process_alive
from tests.cli.invoke import isolated_env

pytestmark = pytest.mark.bwrap


@pytest.fixture(
    params=[
        pytest.param("process", marks=pytest.mark.bwrap),
        pytest.param("gvisor", marks=pytest.mark.gvisor),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


GOLEM = Path(sys.executable).with_name("golem")

OWNER = """
import asyncio, sys
from golem.core import load_config
from golem.sandbox import Engine, LocalEngine

async def main():
    engine = LocalEngine(load_config(files=[]))
    box = await engine.create_session(engine.spec(timeout=10))
    await box.start("sleep 1000")
    print(box.id, flush=True)
    await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


def start_owner(config: GolemConfig, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A separate process that makes a box, prints its id and then waits on stdin."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=isolated_env(config, tmp_path),
        cwd=tmp_path,
    )
    assert owner.stdout is not None
    return owner, owner.stdout.readline().decode().strip()


@pytest.fixture
async def orphan(config: GolemConfig, tmp_path: Path) -> BoxRecord:
    """A box left behind by a process that was SIGKILLed (and reaped) while it held it."""
    owner, box_id = await asyncio.to_thread(start_owner, config, tmp_path)
    owner.kill()
    owner.communicate()
    record = LocalEngine(config).registry.load(box_id)
    assert record is not None, f"the owner printed {box_id!r}, not a recorded box id"
    return record


def running(pid: int, start: int | None) -> bool:
    """Whether ``pid`` is still that process and not a zombie waiting for its parent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX" and process_alive(pid, start)


def cmdline(pid: int) -> bytes:
    """A process's arguments, joined by spaces."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")


def box_processes(box_id: str) -> list[int]:
    """Host pids whose cgroup path or command line names the box (gVisor's runsc, gofer
    and sandbox name it in their arguments)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or not running(int(entry.name), None):
                continue
            if (
                box_id in (entry / "cgroup").read_text()
                or box_id.encode() in (entry / "cmdline").read_bytes()
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def assert_gone(engine: Engine, record: BoxRecord) -> None:
    assert box_processes(record.id) == []
    assert not running(record.state["pid"], record.state["pid_start"])
    assert [d for d in record.state["cgroup_dirs"] if Path(d).exists()] == []
    assert record.id not in [info.id for info in await engine.boxes()]
    assert not (engine.config.state_dir / "boxes" / f"{record.id}.json").exists()
    if "box_dir" in record.state:  # gVisor: the bundle and runsc's state
        assert not Path(record.state["box_dir"]).exists()


async def test_prune_removes_the_box_of_a_killed_owner(engine: Engine, orphan: BoxRecord) -> None:
    assert [info.owner_alive for info in await engine.boxes() if info.id == orphan.id] == [False]
    assert orphan.state["cgroup_dirs"], "this machine gives boxes cgroups"
    assert all(Path(d).is_dir() for d in orphan.state["cgroup_dirs"])
    removed = await engine.prune()
    assert [info.id for info in removed] == [orphan.id]
    await assert_gone(engine, orphan)
    assert await engine.prune() == []


async def test_prune_leaves_live_boxes_alone(engine: Engine, orphan: BoxRecord) -> None:
    async with engine.session() as box:
        assert [info.id for info in await LocalEngine(engine.config).prune()] == [orphan.id]
        assert (await box.execute("echo ok")).stdout_text == "ok\n"
        assert [info.id for info in await engine.boxes()] == [box.id]


async def test_prune_removes_the_box_of_a_killed_owner_not_yet_reaped(
    engine: Engine, tmp_path: Path
) -> None:
    """A SIGKILLed owner is dead even while its parent has not collected its exit status."""
    owner, box_id = await asyncio.to_thread(start_owner, engine.config, tmp_path)
    try:
        owner.kill()
        for _ in range(10_000):  # until the kernel has made it a zombie
            if not running(owner.pid, None):
                break
        assert [info.id for info in await engine.prune()] == [box_id]
    finally:
        owner.communicate()
        await LocalEngine(engine.config).prune()


@pytest.mark.skipif(not GOLEM.exists(), reason="the golem CLI is not installed")
async def test_golem_prune_cli_removes_the_box_of_a_killed_owner(
    engine: Engine, orphan: BoxRecord, tmp_path: Path
) -> None:
    cli = await asyncio.create_subprocess_exec(
        str(GOLEM),
        "prune",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=isolated_env(engine.config, tmp_path),
        cwd=tmp_path,
    )
    out, err = await asyncio.wait_for(cli.communicate(), 60)
    assert cli.returncode == 0, err.decode()
    assert f"removed {orphan.id}" in out.decode()
    assert "pruned 1 box(es)" in out.decode()
    await assert_gone(engine, orphan)


@pytest.mark.parametrize("backend", [pytest.param("gvisor", marks=pytest.mark.gvisor)])
async def test_prune_kills_what_runsc_left_without_cgroups(
    config: GolemConfig, tmp_path: Path
) -> None:
    """Without cgroups to hold them, the orphan's gofer and sandbox are found by runsc's
    own state and killed, its bundle removed: here a sandbox hung (stopped) when its owner
    died, so it never saw its channel close and lives on until prune."""
    backend = config.engine.backend.model_copy(update={"cgroups": "off"})
    config = config.model_copy(
        update={"engine": config.engine.model_copy(update={"backend": backend})}
    )
    owner, box_id = await asyncio.to_thread(start_owner, config, tmp_path)
    record = LocalEngine(config).registry.load(box_id)
    assert record is not None
    assert record.state["cgroup_dirs"] == []
    (sandbox,) = [p for p in box_processes(box_id) if b" boot " in cmdline(p)]
    os.kill(sandbox, signal.SIGSTOP)
    os.kill(owner.pid, signal.SIGKILL)
    owner.communicate()
    assert running(sandbox, None), "the hung sandbox outlived its owner"
    engine = LocalEngine(config)
    assert [info.id for info in await engine.prune()] == [box_id]
    await assert_gone(engine, record)
