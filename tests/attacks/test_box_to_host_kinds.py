"""Attacker suite, box -> host: special files and modes (a setuid or setgid program, a
FIFO, a hard link) and sizes (a huge sparse file, a file over ``max_file_bytes``, a device
as a returned file) handed back by a run's box or a box's files API.

Each attempt must fail: no such file on the host, the host process's peak memory grows by
less than 200 MB, and the run or call ends with an error naming the rule. On bubblewrap,
dockerd and Podman.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.core import GolemConfig, GolemError, UnsafeBoxOutput
from golem.sandbox import Engine, ExecRequest
from tests.attacks.takeback_harness import (
    FIX_CALCULATOR,
    minion_with_box,
    peak_memory_growth,
    rule_of,
    run_attack,
    scripted,
    special_files,
)
from tests.blueprint.repos import make_remote
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]

MEMORY_BOUND = 200 * 1024 * 1024
"""How far the host process's peak resident memory may rise while it refuses a box's
transfer: a bound (the transfers here are gigabytes), not a measurement."""


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs on bubblewrap, dockerd and Podman."""
    return str(request.param)


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


PLANTED = {
    "setuid-program": ("cp /bin/sh rootshell && chmod 4755 rootshell", "takeback.mode"),
    "setgid-program": ("cp /bin/sh groupshell && chmod 2755 groupshell", "takeback.mode"),
    "sticky-file": ("echo x > sticky && chmod 1755 sticky", "takeback.mode"),
    "fifo-over-a-tracked-file": ("rm README.md && mkfifo README.md", "takeback.kind"),
}


@pytest.mark.parametrize("attack", list(PLANTED))
async def test_a_run_lands_no_setuid_setgid_or_special_file_on_the_host(
    attack: str, config: GolemConfig, engine: Engine, remote: Path, tmp_path: Path
) -> None:
    command, rule = PLANTED[attack]
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; {command}")
    state, prs = await run_attack(config, engine, remote, model)
    assert state.status == "failed"
    assert rule_of(state.error) == rule, state.error
    assert prs == []
    checkout = Path(state.workspace)
    assert special_files(checkout) == []
    for name in ("rootshell", "groupshell", "sticky"):
        assert not (checkout / name).exists()
    assert (checkout / "README.md").is_file()


async def test_a_huge_sparse_file_in_a_run_is_refused_without_the_host_holding_it(
    backend: str, config: GolemConfig, engine: Engine, remote: Path, tmp_path: Path
) -> None:
    # 50 GB that cost the box nothing: the host must refuse it and never hold what it
    # streamed in memory. Bubblewrap's run keeps the default limits (256 MiB a file, 2 GiB
    # a transfer); the container backends move some 30 MB/s through their attach stream,
    # so theirs caps a transfer at 256 MiB to keep the suite quick.
    blueprint = (
        "minion" if backend == "process" else minion_with_box(tmp_path, max_takeback_bytes="256m")
    )
    model = scripted(tmp_path, f"set -e; {FIX_CALCULATOR}; truncate -s 50G huge.bin")
    with peak_memory_growth() as growth:
        state, _ = await run_attack(config, engine, remote, model, blueprint=blueprint)
    assert state.status == "failed"
    assert rule_of(state.error) == "takeback.size", state.error
    assert not (Path(state.workspace) / "huge.bin").exists()
    assert growth[0] < MEMORY_BOUND, f"the host's peak memory grew by {growth[0] >> 20} MiB"


async def test_a_file_over_max_file_bytes_is_refused_by_get_file_and_return_files(
    engine: Engine, tmp_path: Path
) -> None:
    async with engine.session(engine.spec(max_file_bytes="1m")) as box:
        await box.execute("head -c 3000000 /dev/zero > big; head -c 600000 /dev/zero > half")
        with peak_memory_growth() as growth:
            with pytest.raises(UnsafeBoxOutput) as by_get:
                await box.get_file("big")
            with pytest.raises(UnsafeBoxOutput) as by_copy:
                await box.get_file_to("big", tmp_path / "big")
            with pytest.raises(UnsafeBoxOutput) as by_return:
                await box.execute(ExecRequest(cmd=["true"], return_files=["big"]))
            with pytest.raises(UnsafeBoxOutput) as by_two:  # two files, over the cap together
                await box.execute(ExecRequest(cmd=["true"], return_files=["half", "half"]))
        assert growth[0] < MEMORY_BOUND
    refused = [by_get.value, by_copy.value, by_return.value, by_two.value]
    assert [error.rule for error in refused] == ["takeback.size"] * 4


@pytest.mark.parametrize("backend", ["process"])
async def test_return_files_over_the_cap_together_are_refused_naming_the_boxs_limit(
    engine: Engine,
) -> None:
    async with engine.session(engine.spec(max_file_bytes="1m")) as box:
        await box.execute("head -c 600000 /dev/zero > half")
        with pytest.raises(UnsafeBoxOutput) as got:
            await box.execute(ExecRequest(cmd=["true"], return_files=["half", "half"]))
    assert got.value.rule == "takeback.size"
    assert "max_file_bytes (1m)" in str(got.value), "the error names the limit the box has"


NOT_REGULAR = {
    "character-device": "/dev/zero",
    "fifo": "fifo",
    "socket": "socket",
    "proc-file-longer-than-its-size": "/proc/self/status",
    "link-to-a-device": "zero-link",
}
"""Paths a box may name as a file that are not one (a /proc file's size says 0)."""


@pytest.mark.parametrize("kind", list(NOT_REGULAR))
async def test_anything_but_a_regular_file_asked_as_a_file_is_refused_at_once_naming_the_rule(
    kind: str, engine: Engine
) -> None:
    path = NOT_REGULAR[kind]
    async with engine.session(engine.spec(max_file_bytes="1m")) as box:
        made = await box.execute(
            "mkfifo fifo && ln -s /dev/zero zero-link && python3 -c "
            "'import socket; socket.socket(socket.AF_UNIX).bind(\"socket\")'"
        )
        assert made.exit_code == 0, made.stderr_text
        with peak_memory_growth() as growth:
            with pytest.raises(GolemError) as by_return:
                await box.execute(ExecRequest(cmd=["true"], return_files=[path]))
            with pytest.raises(GolemError) as by_get:
                await box.get_file(path)
        assert growth[0] < MEMORY_BOUND  # the attempt failed: nothing was streamed
    for refused in (by_return.value, by_get.value):
        assert rule_of(str(refused)) == "takeback.kind", str(refused)
