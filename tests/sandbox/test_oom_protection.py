"""A box with the default sizes cannot starve its own supervisor: what it writes to its
tmpfs counts against its memory, and the defaults leave room beyond full disks, so filling
them ends in ENOSPC for the writer and the session keeps working."""

from __future__ import annotations

import pytest

from golem.core.errors import GolemError
from golem.sandbox import Engine
from tests.conftest import BOTH_BACKENDS, QUICK_START_BACKENDS, SHARED_LOOP

FILL = (
    "for d in /workspace /tmp /dev/shm; do "
    "dd if=/dev/zero of=$d/fill bs=1M 2>&1 | grep -q 'No space left' && echo full; done"
)

pytestmark = SHARED_LOOP


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("backend", QUICK_START_BACKENDS)
async def test_a_box_that_fills_its_disks_keeps_its_supervisor(engine: Engine) -> None:
    async with engine.session() as box:
        filled = await box.execute(FILL)
        assert filled.stdout == b"full\n" * 3, filled
        assert not filled.oom_killed
        with pytest.raises(GolemError, match="No space left"):  # written by the supervisor
            await box.put_file("/workspace/more", b"x" * (40 * 1024**2))
        after = await box.execute("python3 -c 'b = bytearray(200 * 2**20); print(len(b))'")
        assert (after.exit_code, after.oom_killed) == (0, False), after
        assert (await box.execute("echo alive")).stdout == b"alive\n"


@pytest.mark.parametrize(
    "backend",
    # gVisor has no OOM killer of its own: a box over its memory ends whole
    # (tests/sandbox/test_security.py, test_memory_hog_in_a_child_process_...).
    [p for p in BOTH_BACKENDS if p.values[0] != "gvisor"],
)
async def test_a_child_killed_by_the_limit_in_a_box_full_of_files_is_reported(
    engine: Engine,
) -> None:
    """Like `npm install` whose worker blows the limit while node_modules fills the tmpfs:
    the call's own process survives, and the result still says the memory limit struck."""
    spec = engine.spec(memory="256m", timeout=30)
    hog = "python3 -c 'x = []\nwhile True: x.append(bytearray(16 << 20))'"
    async with engine.session(spec) as box:
        filled = await box.execute("dd if=/dev/zero of=/workspace/files bs=1M count=160 2>&1")
        assert filled.exit_code == 0, filled.stdout_text
        result = await box.execute(f'sh -c "{hog}"; echo child $?')
        assert result.stdout_text == "child 137\n", result
        assert (result.exit_code, result.oom_killed) == (0, True), result
        assert (await box.execute("echo alive")).stdout == b"alive\n"
