"""A box's private container engine: a microVM box that asks for ``containers`` runs
containers of images that came in without a registry (golem's base, a tar put into the box,
an image built on that base), with DOCKER_HOST set; a box that did not ask has no engine;
every other backend refuses, naming the microvm tier; such a box never goes to the pool.

The attacks on it (the host's engine, the guest's kernel, the network) are in
tests/attacks/test_box_containers.py; all share the session's one containers box.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import subprocess
import tarfile
from pathlib import Path

import pytest

from golem.core import InvalidRequest, SandboxError, load_config
from golem.core.spec import BoxSpec
from golem.sandbox import Box, LocalEngine
from golem.sandbox.backends.microvm.engine_disk import engine_disk
from golem.sandbox.pool import shape_of
from tests.cli.invoke import golem
from tests.conftest import CONTAINERS_TIMEOUT, PODMAN_SOCKET, SHARED_LOOP, SYNC_ON_SHARED_LOOP
from tests.sandbox.minimal_image import _copy, _libraries, build_minimal_image

pytestmark = SHARED_LOOP

BUSYBOX = Path("/bin/busybox")


def image_archive(tag: str, command: list[str]) -> bytes:
    """An image as `docker save` writes it (manifest, config, one layer), made on the host:
    one static busybox at /bin/busybox, running ``command``."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w") as layer:
        directory = tarfile.TarInfo("bin")
        directory.type, directory.mode = tarfile.DIRTYPE, 0o755
        layer.addfile(directory)
        data = BUSYBOX.read_bytes()
        program = tarfile.TarInfo("bin/busybox")
        program.size, program.mode = len(data), 0o755
        layer.addfile(program, io.BytesIO(data))
    layer_bytes = layer_buffer.getvalue()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": command},
            "rootfs": {
                "type": "layers",
                "diff_ids": [f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"],
            },
        }
    ).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = json.dumps(
        [{"Config": config_name, "RepoTags": [tag], "Layers": ["layer/layer.tar"]}]
    ).encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as image:
        for name, content in (
            ("manifest.json", manifest),
            (config_name, config),
            ("layer/layer.tar", layer_bytes),
        ):
            member = tarfile.TarInfo(name)
            member.size = len(content)
            image.addfile(member, io.BytesIO(content))
    return archive.getvalue()


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_a_box_with_containers_runs_a_container_of_golems_base_image(
    containers_box: Box,
) -> None:
    result = await containers_box.execute(
        "echo $DOCKER_HOST; docker run --rm golem/busybox echo hi from a container"
    )
    assert result.exit_code == 0, result.stderr_text
    assert result.stdout_text.splitlines() == [
        "unix:///run/docker.sock",
        "hi from a container",
    ]


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_an_image_tar_put_into_the_box_loads_and_runs_without_a_registry(
    containers_box: Box,
) -> None:
    said = "loaded-" + secrets.token_hex(6)
    tag = f"local/loaded:{secrets.token_hex(4)}"
    await containers_box.put_file("image.tar", image_archive(tag, ["/bin/busybox", "echo", said]))
    result = await containers_box.execute(
        f"docker load -q -i image.tar && docker run --rm {tag} && docker image rm -f {tag}"
    )
    assert result.exit_code == 0, result.stderr_text
    assert said in result.stdout_text.splitlines()


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_an_image_builds_in_the_box_from_golems_base_and_stays_there(
    containers_box: Box,
) -> None:
    said = "built-" + secrets.token_hex(6)
    dockerfile = f'FROM golem/busybox\nRUN echo {said} >/built\nCMD ["cat", "/built"]\n'
    await containers_box.put_file("build/Dockerfile", dockerfile.encode())
    result = await containers_box.execute(
        "docker build -q --network host -t local/built build >/dev/null && "
        "docker run --rm local/built && docker image rm -f local/built >/dev/null"
    )
    assert result.exit_code == 0, result.stderr_text
    assert result.stdout_text.strip() == said


@pytest.mark.microvm
@pytest.mark.parametrize("backend", ["microvm"])
async def test_a_box_that_did_not_ask_has_the_docker_cli_but_no_engine_and_no_docker_host(
    box: Box,
) -> None:
    result = await box.execute(
        "echo ${DOCKER_HOST-unset}; command -v docker; "
        "ls /run/docker.sock /var/run/docker.sock 2>&1; docker version 2>&1; echo $?"
    )
    lines = result.stdout_text.splitlines()
    assert lines[:2] == ["unset", "/usr/bin/docker"]  # the devbox has the client
    assert all("No such file" in line for line in lines[2:4])
    assert any("Cannot connect to the Docker daemon" in line for line in lines)
    assert lines[-1] != "0"


@pytest.mark.parametrize(
    "backend",
    [
        {"type": "process"},
        {"type": "docker"},
        {"type": "docker", "docker_host": PODMAN_SOCKET},
        {"type": "docker", "runtime": "runsc"},
        {"type": "gvisor"},
    ],
    ids=["process", "docker", "podman", "docker-runsc", "gvisor"],
)
async def test_every_other_backend_refuses_containers_naming_the_microvm_tier(
    backend: dict[str, str], tmp_path: Path
) -> None:
    """Refused before any box starts: the refusal needs none of these engines."""
    config = load_config({"state_dir": str(tmp_path), "engine": {"backend": backend}}, files=[])
    async with LocalEngine(config) as engine:
        with pytest.raises(InvalidRequest, match="only the microvm tier can") as refused:
            async with engine.session(engine.spec(containers=True)):
                pass
        assert f"the {engine.backend.name} backend cannot" in str(refused.value)
        assert await engine.boxes() == []


@SYNC_ON_SHARED_LOOP
def test_a_box_with_containers_never_goes_to_the_warm_pool() -> None:
    assert shape_of(BoxSpec(tier="microvm")) is not None
    assert shape_of(BoxSpec(tier="microvm", containers=True)) is None


@SYNC_ON_SHARED_LOOP
def test_golem_exec_containers_on_the_process_backend_says_to_ask_for_microvm(
    golem_env: dict[str, str],
) -> None:
    done = golem(golem_env, "exec", "--backend", "process", "--containers", "--", "true")
    assert done.returncode != 0
    assert b"only the microvm tier can" in done.stderr
    assert b"Traceback" not in done.stderr


@SYNC_ON_SHARED_LOOP
def test_the_engines_disk_is_a_sparse_nameless_ext4_file_for_qemus_user(tmp_path: Path) -> None:
    owner = (65534, 65534) if os.geteuid() == 0 else None
    fd = engine_disk(tmp_path, 256 * 1024**2, owner)
    try:
        assert list(tmp_path.iterdir()) == []  # no name: gone with its last holder
        info = os.fstat(fd)
        assert info.st_size == 256 * 1024**2
        assert info.st_blocks * 512 < 32 * 1024**2  # sparse: the host holds what is written
        if owner is not None:
            assert (info.st_uid, info.st_gid) == owner
        argv = ["dumpe2fs", "-h", f"/dev/fd/{fd}"]
        header = subprocess.run(argv, check=False, capture_output=True, text=True, pass_fds=[fd])
        assert "Filesystem volume name:   golem-engine" in header.stdout
    finally:
        os.close(fd)


@SYNC_ON_SHARED_LOOP
def test_an_assets_dir_without_nameless_files_is_a_clear_error() -> None:
    with pytest.raises(SandboxError, match=r"engine\.backend\.assets_dir on a file system"):
        engine_disk(Path("/proc"), 256 * 1024**2, None)


@pytest.mark.microvm
async def test_an_engine_that_cannot_start_fails_the_box_with_its_reason_never_hangs(
    tmp_path: Path,
) -> None:
    """An image with what the guest needs but no engine (nor a place for its data)."""
    image = build_minimal_image(tmp_path / "image")
    tools = [Path("/usr/bin/setpriv"), Path("/usr/bin/env")]
    for source in [*tools, *_libraries(tools)]:
        _copy(source, image)
    (image / "run").mkdir()
    backend = {"type": "microvm", "image": str(image)}
    state = str(tmp_path / "state")
    config = load_config({"state_dir": state, "engine": {"backend": backend}}, files=[])
    async with LocalEngine(config) as engine:
        with pytest.raises(SandboxError, match="container engine did not start") as failed:
            await engine.execute("true", engine.spec(containers=True))
        assert "golem-engine: cannot mount its disk" in str(failed.value)
        assert await engine.boxes() == []
