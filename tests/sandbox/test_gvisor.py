"""The gvisor backend specifically: gVisor's kernel answers, the runsc flags golem chose
are recorded, the platform is found by trying, the OCI bundle keeps the box's hardening."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from golem.core import BackendUnavailable, GolemConfig, GvisorBackendConfig, load_config
from golem.core.spec import BoxSpec
from golem.sandbox import Engine, LocalEngine
from golem.sandbox.backends.gvisor import GvisorBackend
from golem.sandbox.backends.gvisor.bundle import BundleLayout, oci_config
from golem.sandbox.backends.gvisor.runsc import CACHE_NAME, PLATFORMS, runsc_host
from golem.sandbox.backends.process.launch import as_user, host_ids
from golem.sandbox.backends.process.seccomp import gvisor_profile

pytestmark = pytest.mark.gvisor


@pytest.fixture
def backend() -> str:
    return "gvisor"


async def test_a_gvisor_box_reports_gvisors_kernel_not_the_hosts(engine: Engine) -> None:
    async with engine.session() as box:
        seen = await box.execute("uname -r; cat /proc/version")
    release, version = seen.stdout_text.splitlines()
    assert release != os.uname().release
    assert version != Path("/proc/version").read_text().strip()


async def test_the_boxs_record_names_runsc_its_platform_and_flags(
    engine: LocalEngine,
) -> None:
    async with engine.session() as box:
        record = engine.registry.load(box.id)
        assert record is not None
        runsc = record.state["runsc"]
        assert runsc["platform"] in PLATFORMS
        assert runsc["version"]
        flags = record.state["runsc_flags"]
        assert f"--platform={runsc['platform']}" in flags
        assert {"--rootless", "--oci-seccomp", "--network=none"} <= set(flags)
        assert "--host-uds=open" not in flags  # only a filtered box reaches a host socket


async def test_the_boxs_isolation_says_runscs_platform_and_flags_as_its_record_does(
    engine: LocalEngine,
) -> None:
    """The flags golem chose for runsc on this host are reported wherever the box's
    isolation is (its handle, ``engine.boxes()``: `golem sessions ls`, the API)."""
    async with engine.session() as box:
        record = engine.registry.load(box.id)
        assert record is not None
        platform = record.state["runsc"]["platform"]
        assert box.isolation is not None
        assert (box.isolation.platform, box.isolation.flags) == (
            platform,
            record.state["runsc_flags"],
        )
        assert str(box.isolation) == f"gvisor ({platform})"
        assert [info.isolation for info in await engine.boxes()] == [box.isolation]
        assert (await box.execute("true")).isolation == box.isolation


REPLY = b"go"
WAITING_RUNSC = """#!/bin/sh
# runsc, once the test's event loop has answered on {socket} (its first call only)
if [ "$1" = "--version" ]; then
  python3 -I -c '
import socket, sys
peer = socket.socket(socket.AF_UNIX)
peer.settimeout(20)
peer.connect(sys.argv[1])
sys.exit(peer.recv(2) != b"go")' {socket} || exit 1
fi
exec runsc "$@"
"""


async def test_a_backends_first_check_leaves_the_event_loop_free(
    tmp_path: Path, reachable_dir: Path
) -> None:
    """A backend's first check (runsc's version, a platform tried in a sandbox: up to 10 s
    on a host whose KVM never runs guests) runs in a worker thread: this runsc answers only
    once this test's event loop has served it, so a check on the loop fails."""
    socket = tmp_path / "loop.sock"

    async def answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(REPLY)
        await writer.drain()
        writer.close()

    runsc = reachable_dir / "runsc"  # the run_as user runs it too
    runsc.write_text(WAITING_RUNSC.format(socket=socket))
    runsc.chmod(0o755)
    backend = {"type": "gvisor", "runsc": str(runsc), "platform": "ptrace"}
    settings = {"state_dir": str(tmp_path / "state"), "engine": {"backend": backend}}
    config = load_config(settings, files=[])
    server = await asyncio.start_unix_server(answer, path=str(socket))
    async with server, LocalEngine(config) as engine:
        assert (await engine.execute("echo checked")).stdout_text == "checked\n"


def test_the_platform_is_found_by_trying_and_kept(tmp_path: Path) -> None:
    ids = host_ids("nobody")
    prefix = (as_user(ids) or []) if ids else []
    found = runsc_host("runsc", "auto", tmp_path, prefix)
    assert found.tried[found.platform] == "ok"
    before = list(found.tried)[: list(found.tried).index(found.platform)]
    assert all(found.tried[name] != "ok" for name in before)  # faster ones did not start
    kept = json.loads((tmp_path / CACHE_NAME).read_text())
    assert kept["host"]["platform"] == found.platform
    assert runsc_host("runsc", "auto", tmp_path, prefix) == found  # not tried again


def test_a_missing_runsc_is_unavailable_with_what_to_install() -> None:
    backend = GvisorBackend(GvisorBackendConfig(runsc="/nonexistent/runsc"))
    with pytest.raises(BackendUnavailable, match="apt-get install runsc"):
        backend.check()


def test_the_bundle_drops_every_capability_and_keeps_the_root_read_only() -> None:
    layout = BundleLayout(root=Path("/r"), host_paths=(), workspace=None)
    config = oci_config(BoxSpec(), layout, ["python3"], {"RLIMIT_NPROC": 256}, gvisor_profile())
    process = config["process"]
    assert all(caps == [] for caps in process["capabilities"].values())
    assert (process["noNewPrivileges"], config["root"]["readonly"]) == (True, True)
    assert process["user"] == {"uid": 1000, "gid": 1000, "additionalGids": []}
    assert {"type": "network"} in config["linux"]["namespaces"]
    assert config["linux"]["seccomp"]["defaultAction"] == "SCMP_ACT_ERRNO"
    host = oci_config(BoxSpec(network="host"), layout, ["python3"], {}, gvisor_profile())
    assert {"type": "network"} not in host["linux"]["namespaces"]


async def test_a_box_without_cgroups_keeps_its_limits_inside_gvisor(
    config: GolemConfig,
) -> None:
    """Without cgroups, gVisor's kernel counts the box's processes (RLIMIT_NPROC)."""
    backend = config.engine.backend.model_copy(update={"cgroups": "off"})
    config = config.model_copy(
        update={"engine": config.engine.model_copy(update={"backend": backend})}
    )
    fork = (
        "import os, time\nn = 0\ntry:\n    while n < 100:\n"
        "        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n"
        "        n += 1\nexcept OSError:\n    pass\nprint(n)"
    )
    async with LocalEngine(config) as engine, engine.session(engine.spec(pids=16)) as box:
        forked = await box.execute(["python3", "-c", fork])
        assert 0 < int(forked.stdout_text) < 16, forked


async def test_a_host_workspace_is_the_box_roots_and_only_read_by_other_users(
    engine: Engine, box_owned_dir: Path
) -> None:
    """runsc's gofer serves host files as its one host user (run_as), which gVisor shows
    as root: a root box writes the workspace (as that user on the host), a box of another
    user reads and runs what is there but writes nothing (docs/sandbox.md)."""
    (box_owned_dir / "hello.txt").write_text("from host")
    root = engine.spec(workspace=box_owned_dir, user="root")
    result = await engine.execute("cat hello.txt; echo from box > made.txt", root)
    assert result.stdout_text == "from host", result.stderr_text
    assert (box_owned_dir / "made.txt").read_text() == "from box\n"
    other = await engine.execute(
        "cat hello.txt; echo x > other.txt", engine.spec(workspace=box_owned_dir)
    )
    assert other.stdout_text == "from host"
    assert "Permission denied" in other.stderr_text
    assert not (box_owned_dir / "other.txt").exists()
