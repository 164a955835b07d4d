"""The docker backend specifically: hardening as seen from inside, limits, orphans, images."""

from __future__ import annotations

import asyncio
import os
import sys
from asyncio.subprocess import PIPE
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from golem.core import GolemConfig, ImageNotFound, SandboxError
from golem.sandbox import Engine, ExecRequest, LocalEngine
from tests.conftest import BOTH_BACKENDS, ENGINES, engine_api


@pytest.fixture(params=[p for p in BOTH_BACKENDS if p.values[0] in ENGINES])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api(backend: str) -> Iterator[docker.APIClient]:
    with engine_api(backend) as client:
        yield client


async def test_box_is_hardened_as_seen_from_inside(engine: Engine) -> None:
    async with engine.session() as box:
        status = await box.execute(
            "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status"
        )
        fields = dict(line.split(":\t") for line in status.stdout_text.splitlines())
        assert fields == {
            "CapEff": "0000000000000000",
            "CapBnd": "0000000000000000",
            "NoNewPrivs": "1",
            "Seccomp": "2",  # the engine's default profile, kept
        }
        identity = await box.execute("id -u; head -c 19 /proc/1/cmdline | tr '\\0' ' '; echo")
        assert identity.stdout_text.splitlines() == ["1000", "python3 -I -S -u -c"]
        probes = await box.execute(
            "touch /usr/x 2>&1; ls /var/run/docker.sock /run/docker.sock 2>&1; "
            "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"
        )
        assert "Read-only file system" in probes.stdout_text
        assert probes.stdout_text.count("No such file or directory") == 2  # no engine socket
        assert probes.stdout_text.splitlines()[-1] == "lo"


async def test_a_writable_root_is_available_on_request(engine: Engine) -> None:
    async with engine.session(engine.spec(read_only_root=False, user="root")) as box:
        result = await box.execute("touch /usr/local/made-here && echo written")
        assert result.stdout_text == "written\n"


async def test_memory_and_pids_limits_hold(engine: Engine) -> None:
    async with engine.session(engine.spec(memory="96m", pids=48, timeout=10)) as box:
        hog = await box.execute(ExecRequest(code="x = bytearray(400 << 20)", runtime="python"))
        assert hog.oom_killed
        assert hog.exit_code == 137
        bomb = await box.execute(ExecRequest(cmd=["bash", "-c", ":(){ :|:& };:"], timeout=3))
        assert bomb.exit_code in (0, 137)
        assert (await box.execute("echo alive")).stdout_text == "alive\n"


async def test_an_image_the_engine_lacks_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(ImageNotFound, match="golem image bootstrap"):
        await engine.execute("true", engine.spec(image="golem/no-such-image:1"))


async def test_released_container_is_wiped_before_reuse(engine: Engine) -> None:
    async with engine.session(engine.spec(env={"ONE_USE": "1"})) as first:
        await first.start("sleep 1000")
        await first.execute("echo t > /tmp/trace; echo w > /workspace/trace")
    async with engine.session() as second:
        assert second.id == first.id
        left = await second.execute(
            "ls -A /workspace; ls -A /tmp | grep -v '^home$'; env | grep ONE_USE; "
            "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -o 'sleep 100[0]'; true"
        )
        assert left.stdout_text == ""


OWNER = """
import asyncio, sys
from golem.core import load_config
from golem.sandbox import Engine, LocalEngine

async def main():
    engine = LocalEngine(load_config(files=[]))
    box = await engine.create_session()
    print(box.id, flush=True)
    await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


async def test_a_killed_owner_leaves_no_container_after_prune(
    config: GolemConfig, api: docker.APIClient, backend: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env |= {
        "GOLEM_STATE_DIR": str(config.state_dir),
        "GOLEM_ENGINE__BACKEND__TYPE": "docker",
        "GOLEM_ENGINE__BACKEND__IMAGE": config.engine.backend.image,  # type: ignore[union-attr]
        "GOLEM_ENGINE__BACKEND__DOCKER_HOST": config.engine.backend.docker_host or "",  # type: ignore[union-attr]
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
    }
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, stdin=PIPE, stdout=PIPE, env=env
    )
    assert owner.stdout is not None
    box_id = (await owner.stdout.readline()).decode().strip()
    labelled = {"label": f"golem.box={box_id}"}
    assert len(api.containers(filters=labelled)) == 1
    owner.kill()
    await owner.communicate()
    async with LocalEngine(config) as engine:
        removed = await engine.prune()
    assert [info.id for info in removed] == [box_id]
    assert api.containers(all=True, filters=labelled) == []


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker)])
async def test_the_oci_runtime_is_passed_through(config: GolemConfig) -> None:
    """dockerd honours the runtime; Podman's compatible API ignores it (docs/docker.md)."""
    for name, works in (("runc", True), ("no-such-runtime", False)):
        engine_config = config.engine.backend.model_copy(update={"oci_runtime": name})
        changed = config.model_copy(
            update={"engine": config.engine.model_copy(update={"backend": engine_config})}
        )
        async with LocalEngine(changed) as engine:
            if works:
                assert (await engine.execute("echo ran")).stdout_text == "ran\n"
            else:
                with pytest.raises(SandboxError, match=name):
                    await engine.execute("true")


async def test_prune_finds_a_container_by_its_record_alone(
    config: GolemConfig, api: docker.APIClient
) -> None:
    """A container whose record never got its state (golem died in between) is pruned."""
    async with LocalEngine(config) as engine:
        box = await engine.create_session()
        record = engine.registry.load(box.id)
        assert record is not None
        record.state = {}
        record.owner_pid, record.owner_start = 2**22 + 1, None  # an owner that never ran
        engine.registry.save(record)
        async with LocalEngine(config) as other:  # as `golem prune` from another process
            removed = await other.prune()
        assert [info.id for info in removed] == [box.id]
        assert api.containers(all=True, filters={"label": f"golem.box={box.id}"}) == []
