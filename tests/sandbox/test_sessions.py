"""Sessions: persistence across calls, setup scripts, background processes, reconnection."""

from __future__ import annotations

import asyncio
import contextlib
import signal

import pytest

from golem.core import GolemConfig, InvalidRequest, SessionNotFound, SetupFailed
from golem.sandbox import Box, Engine, ExecEvent, ExecRequest, SyncEngine
from tests.conftest import BOTH_BACKENDS, QUICK_START_BACKENDS, SHARED_LOOP, SYNC_ON_SHARED_LOOP
from tests.sandbox.binary_output import PAYLOAD, writer

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on both backends unless it pins one."""
    return str(request.param)


async def test_session_keeps_state_between_calls(box: Box) -> None:
    await box.execute("echo kept > state.txt")
    assert (await box.execute("cat state.txt")).stdout_text == "kept\n"


async def test_fresh_box_per_execute_forgets_state(engine: Engine) -> None:
    await engine.execute("echo gone > /workspace/state.txt")
    result = await engine.execute("cat /workspace/state.txt")
    assert result.exit_code != 0


async def test_setup_runs_once_with_setup_phase_events(engine: Engine) -> None:
    events: list[ExecEvent] = []
    spec = engine.spec(setup="echo prepared >> /workspace/setup.log")
    async with engine.session(spec, on_event=events.append) as box:
        await box.execute("true")
        assert (await box.execute("cat setup.log")).stdout_text == "prepared\n"
    assert events
    assert all(e.phase == "setup" for e in events)
    assert any(getattr(e, "data", b"") == b"prepared\n" for e in events) is False  # redirected


async def test_failing_setup_raises_and_leaves_no_box(engine: Engine) -> None:
    before = {info.id for info in await engine.boxes()}  # a shared engine's pooled boxes
    events: list[ExecEvent] = []
    spec = engine.spec(setup="echo broken dependency >&2; exit 4")
    with pytest.raises(SetupFailed, match=r"exit code 4.*broken dependency") as info:
        await engine.create_session(spec, on_event=events.append)
    assert info.value.script_exit_code == 4
    assert [e.type for e in events][-1] == "exit"
    assert events[-1].phase == "setup"
    assert {info.id for info in await engine.boxes()} <= before


async def test_stream_of_a_fresh_box_reports_setup_then_code(engine: Engine) -> None:
    spec = engine.spec(setup="echo setting-up")
    events = [e async for e in engine.stream("echo running", spec)]
    phases = [(e.phase, getattr(e, "data", None)) for e in events if e.type == "stdout"]
    assert phases == [("setup", b"setting-up\n"), ("code", b"running\n")]


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
@pytest.mark.own_engine
async def test_sessions_are_recorded_while_alive(engine: Engine, config: GolemConfig) -> None:
    async with engine.session() as box:
        [info] = await engine.boxes()
        assert info.id == box.id
        assert info.owner_alive
        assert info.backend == config.engine.backend.type
    assert {b.id for b in await engine.boxes()} <= engine.pool.ids()  # wiped into the pool
    await engine.close()
    assert await engine.boxes() == []


async def test_background_process_survives_reconnect(engine: Engine) -> None:
    async with engine.session() as box:
        process = await box.start("echo ready; read line; echo got $line; sleep 1000")
        again = await engine.get_session(box.id)  # a new handle, as after a reconnect
        [listed] = await again.processes()
        assert listed.id == process.id
        assert listed.running
        output = await again.read_output(process.id)
        while "ready" not in output.text:  # wait on the box, not on the clock
            output = await again.read_output(process.id)
        await again.signal(process.id, signal.SIGKILL)
        assert await again.wait(process.id, timeout=30) == 128 + signal.SIGKILL
        final = await again.read_output(process.id)
        assert not final.running
        assert final.exit_code == 137


async def test_background_output_is_the_boxs_bytes(box: Box) -> None:
    process = await box.start(ExecRequest(code=writer(stderr=b""), runtime="python"))
    assert await box.wait(process.id, timeout=30) == 0
    output = await box.read_output(process.id)
    assert (output.data, output.offset) == (PAYLOAD, len(PAYLOAD))
    assert "\ufffd" in output.text


async def test_background_output_is_read_incrementally(box: Box) -> None:
    process = await box.start("echo one; echo two")
    assert await box.wait(process.id, timeout=30) == 0
    first = await box.read_output(process.id)
    assert first.data == b"one\ntwo\n"
    rest = await box.read_output(process.id, offset=first.offset)
    assert rest.data == b""
    await box.forget(process.id)
    assert await box.processes() == []


async def test_unknown_session_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(SessionNotFound, match="sessions ls"):
        await engine.get_session("box-000000000000")
    with pytest.raises(SessionNotFound):
        await engine.remove_session("box-000000000000")


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
@SYNC_ON_SHARED_LOOP
def test_sync_engine_wraps_the_async_one(config) -> None:  # type: ignore[no-untyped-def]
    with SyncEngine(config) as engine:
        assert engine.execute("echo sync").stdout_text == "sync\n"
        with engine.session() as box:
            box.put_file("f.txt", b"abc")
            assert box.execute("cat f.txt").stdout_text == "abc"
            assert box.get_file("f.txt") == b"abc"


async def test_a_call_that_ignores_its_stdin_does_not_hold_up_the_box(box: Box) -> None:
    stuck = asyncio.ensure_future(
        box.execute(ExecRequest(cmd="sleep 1000", stdin=b"x" * (4 << 20), timeout=250))
    )
    quick = asyncio.ensure_future(box.execute("echo quick"))
    # 30 s only guards against a hang: before the fix, nothing finished for 250 s.
    done, _ = await asyncio.wait({stuck, quick}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert done == {quick}
    assert quick.result().stdout_text == "quick\n"
    stuck.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await stuck
    assert (await box.execute("echo after")).stdout_text == "after\n"


async def test_pty_calls_are_first_for_the_oom_killer(box: Box) -> None:
    terminal = await box.open_pty("cat /proc/self/oom_score_adj")
    output = b""
    while (chunk := await terminal.read()) is not None:
        output += chunk
    assert output.strip() == b"1000"


async def test_background_output_keeps_its_latest_bytes_within_the_cap(engine: Engine) -> None:
    async with engine.session({"max_output_bytes": 1000}) as box:
        process = await box.start("seq 1 2000")  # 8893 bytes, the last line "2000\n"
        assert await box.wait(process.id, timeout=30) == 0
        output = await box.read_output(process.id)
        assert output.data.endswith(b"1999\n2000\n")
        assert len(output.data) == 1000
        assert output.start == 8893 - 1000  # the reader learns what was dropped before it
        assert output.offset == 8893
        assert output.truncated
        [listed] = await box.processes()
        assert listed.output_bytes == 8893
        rest = await box.read_output(process.id, offset=output.offset)
        assert (rest.data, rest.start, rest.offset) == (b"", 8893, 8893)


async def test_background_output_cut_inside_a_secret_shows_no_part_of_it(engine: Engine) -> None:
    spec = {"max_output_bytes": 20, "secrets": {"TOKEN": "SECRETVALUE123"}}
    async with engine.session(spec) as box:
        process = await box.start('printf %0100d 0; printf "$TOKEN"; printf abcdefghijklm')
        assert await box.wait(process.id, timeout=30) == 0
        output = await box.read_output(process.id)  # the box kept "ALUE123abcdefghijklm"
        assert output.data == b"abcdefghijklm"
        assert (output.start, output.offset) == (114, 127)


async def test_a_box_runs_at_most_32_waits_on_background_processes(box: Box) -> None:
    sleeper = await box.start("sleep 300")
    waits = [asyncio.ensure_future(box.wait(sleeper.id, 300)) for _ in range(32)]
    await asyncio.sleep(0)  # each wait's frame is written, in order, before the next
    try:
        with pytest.raises(InvalidRequest, match="waits on background processes"):
            await box.wait(sleeper.id, 300)
        await box.signal(sleeper.id, signal.SIGKILL)
        assert all(code is not None for code in await asyncio.gather(*waits))
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    assert await box.wait(sleeper.id, 60) is not None  # the slots came back with the end
