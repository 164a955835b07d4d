"""The warm pool: boxes are reused only after a wipe that leaves nothing of the last session."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from golem.core import GolemConfig, PoolConfig, SandboxError
from golem.sandbox import Engine, ExecRequest, LocalEngine
from golem.sandbox.pool import shape_of
from tests.conftest import BOTH_BACKENDS, QUICK_START_BACKENDS, SHARED_LOOP, kill_box_from_outside

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pool_engine(config: GolemConfig) -> Callable[..., Engine]:
    """An engine on the test's backend with the given pool settings."""

    def make(**pool: Any) -> Engine:
        engine = config.engine.model_copy(update={"pool": PoolConfig(**pool)})
        return LocalEngine(config.model_copy(update={"engine": engine}))

    return make


@pytest_asyncio.fixture(loop_scope="session")
async def pooled(pool_engine: Callable[..., Engine]) -> AsyncIterator[Engine]:
    async with pool_engine(clean=2) as engine:
        yield engine


async def test_a_released_box_serves_the_next_session_of_its_shape(pooled: Engine) -> None:
    async with pooled.session() as first:
        pass
    async with pooled.session() as second:
        assert second.id == first.id
        assert (await second.execute("echo reused")).stdout_text == "reused\n"


LEAVE_TRACES = (
    "echo t > /tmp/trace; echo w > /workspace/trace; echo s > /dev/shm/trace; "
    "mkdir -p /workspace/deep/er; ipcmk -M 4096 >/dev/null; ipcmk -Q >/dev/null; "
    "ipcmk -S 1 >/dev/null"
)
IPC_OBJECTS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
status = ctypes.create_string_buffer(512)
for kind, stat in (("shm", libc.shmctl), ("msg", libc.msgctl)):
    print(*(f"{kind} {i}" for i in range(4096) if stat(i, 2, status) == 0), sep="\\n")
print(*(f"sem {i}" for i in range(4096) if libc.semctl(i, 0, 2, status) == 0), sep="\\n")
"""
"""Every System V IPC object by IPC_STAT on each id below 4096: gVisor has no
/proc/sysvipc to list them (its ids start at 1, Linux's first ones are small too)."""
CHECK_TRACES = (
    "cd /workspace && ls -A; cd /dev/shm && ls -A; cd /tmp && ls -A | grep -v '^home$' | "
    "grep -v '^.golem-code$'; "
    "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -o 'sleep 100[0]' ; "
    f"env | grep -E 'ONE_USE|TOKEN'; python3 -c '{IPC_OBJECTS}' | grep .; true"
)


@pytest.mark.parametrize("strategy", ["fast", "secure"])
async def test_nothing_of_one_session_reaches_the_next(
    pool_engine: Callable[..., Engine], strategy: str
) -> None:
    async with pool_engine(clean=1, dirty=1, strategy=strategy) as engine:
        spec = engine.spec(env={"ONE_USE": "x"}, secrets={"TOKEN": "s3cret-one-use"})
        async with engine.session(spec) as first:
            await first.start("sleep 1000")
            assert (await first.execute(LEAVE_TRACES)).exit_code == 0
            dirty = await first.execute(CHECK_TRACES)
            assert "trace" in dirty.stdout_text  # the check can see traces when they are there
            assert "sleep 1000" in dirty.stdout_text
            assert {"shm", "msg", "sem"} <= {
                line.split()[0]
                for line in dirty.stdout_text.split("\n")
                if line.startswith(("shm ", "msg ", "sem "))
            }
        async with engine.session() as second:
            assert second.id == first.id
            clean = await second.execute(CHECK_TRACES)
            assert await second.processes() == []
    assert clean.stdout_text == ""


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_boxes_of_different_shapes_are_not_shared(pooled: Engine) -> None:
    async with pooled.session(pooled.spec(memory="256m")) as small:
        pass
    async with pooled.session(pooled.spec(memory="300m")) as other:
        assert other.id != small.id


@pytest.mark.parametrize("backend", ["process"])
async def test_boxes_with_a_host_workspace_are_never_pooled(
    pooled: Engine, box_owned_dir: Path
) -> None:
    spec = pooled.spec(workspace=box_owned_dir)
    assert shape_of(spec) is None
    async with pooled.session(spec):
        pass
    assert await pooled.boxes() == []
    assert (box_owned_dir).exists()


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_prewarm_fills_the_pool_and_sessions_take_from_it(pooled: Engine) -> None:
    await pooled.start(prewarm=True)
    warm = {info.id for info in await pooled.boxes()}
    assert len(warm) == 2
    async with pooled.session() as box:
        assert box.id in warm
        assert (await box.execute("echo warm")).stdout_text == "warm\n"


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_a_box_that_died_is_not_handed_out_again(pooled: Engine) -> None:
    async with pooled.session() as box:
        record = pooled.registry.load(box.id)
        assert record is not None
        kill_box_from_outside(record.state)
    assert await pooled.boxes() == []
    async with pooled.session() as fresh:
        assert fresh.id != box.id
        assert (await fresh.execute("echo ok")).stdout_text == "ok\n"


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_twenty_concurrent_sessions_from_a_pool_of_five(
    pool_engine: Callable[..., Engine],
) -> None:
    async with pool_engine(clean=5) as engine:
        await engine.start(prewarm=True)

        async def one(index: int) -> str:
            async with engine.session() as box:
                return (await box.execute(ExecRequest(cmd=f"echo {index}"))).stdout_text

        outputs = await asyncio.gather(*(one(i) for i in range(20)))
        assert outputs == [f"{i}\n" for i in range(20)]
        assert len(await engine.boxes()) <= 5
        dirs = [d for r in engine.registry.all() for d in r.state.get("cgroup_dirs", [])]
    assert await engine.boxes() == []
    assert not any(Path(d).exists() for d in dirs)


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_handles_of_an_ended_session_cannot_reach_the_reused_box(pooled: Engine) -> None:
    async with pooled.session() as first:
        kept = await pooled.get_session(first.id)
    async with pooled.session() as second:
        assert second.id == first.id
        await second.put_file("mine.txt", b"second's")
        for stale in (first, kept):
            assert stale.closed
            with pytest.raises(SandboxError, match=r"session of box .* has ended"):
                await stale.execute("rm -f mine.txt")
            with pytest.raises(SandboxError, match="has ended"):
                await stale.get_file("mine.txt")
        assert await second.get_file("mine.txt") == b"second's"


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_idle_pooled_boxes_are_reaped(pooled: Engine) -> None:
    async with pooled.session() as box:
        pass
    assert await pooled.reap() == []  # just released: not idle for long
    later = time.time() + pooled.pool.config.max_idle + 1  # type: ignore[operator]
    assert await pooled.reap(now=later) == [box.id]
    assert await pooled.boxes() == []


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_boxes_past_their_age_are_stopped_and_their_sessions_end(pooled: Engine) -> None:
    box = await pooled.create_session()
    later = time.time() + pooled.pool.config.max_age + 1  # type: ignore[operator]
    assert await pooled.reap(now=later) == [box.id]
    assert box.closed
    with pytest.raises(SandboxError, match="has ended"):
        await box.execute("true")
    assert await pooled.boxes() == []


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_a_session_cancelled_while_its_pooled_box_is_wiped_leaves_no_box(
    pool_engine: Callable[..., Engine],
) -> None:
    async with pool_engine(clean=1, dirty=1, strategy="secure") as engine:
        async with engine.session():
            pass  # released dirty: the next session wipes it first
        assert len(await engine.boxes()) == 1
        opening = asyncio.ensure_future(engine.create_session())
        await asyncio.sleep(0)  # one turn of the loop: it now awaits the wipe's answer
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        assert await engine.boxes() == []
