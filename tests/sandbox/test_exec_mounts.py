"""A box's writable places can run what is built there (compiled test binaries: cargo test,
go test), on every backend, while a setuid file there still gains nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from golem.sandbox import Engine, ExecRequest
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP, WITH_HOST_DIRECTORY

WRITABLE = ("/workspace", "/tmp", "/dev/shm")
EUID_SOURCE = b"""
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("%d %d\\n", (int)geteuid(), (int)getegid()); return 0; }
"""

pytestmark = SHARED_LOOP


def compile_euid(target: Path) -> Path:
    """A static ELF (so it runs in any image) that prints its effective uid and gid."""
    source = target.with_suffix(".c")
    source.write_bytes(EUID_SOURCE)
    subprocess.run(["cc", "-static", "-O2", "-o", str(target), str(source)], check=True)
    return target


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("place", WRITABLE)
async def test_a_binary_copied_into_a_writable_place_runs(engine: Engine, place: str) -> None:
    async with engine.session() as box:
        result = await box.execute(
            f"cp /bin/true {place}/built && chmod 755 {place}/built && {place}/built && echo ran"
        )
        assert (result.exit_code, result.stdout_text) == (0, "ran\n"), result.stderr_text


@pytest.mark.parametrize("backend", WITH_HOST_DIRECTORY)
async def test_a_binary_built_on_the_host_runs_in_a_bound_workspace(
    engine: Engine, box_owned_dir: Path
) -> None:
    compile_euid(box_owned_dir / "built")
    async with engine.session(engine.spec(workspace=str(box_owned_dir))) as box:
        result = await box.execute("/workspace/built")
        assert (result.exit_code, result.stdout_text) == (0, "1000 1000\n"), result.stderr_text


@pytest.mark.parametrize("place", WRITABLE)
async def test_writable_places_stay_nosuid_and_nodev(
    engine: Engine, place: str, backend: str
) -> None:
    async with engine.session(engine.spec(user="root")) as box:
        result = await box.execute(f"findmnt -no OPTIONS --target {place}")
        options = result.stdout_text.strip().split(",")
        assert "noexec" not in options, options
        if backend != "gvisor":
            assert {"nosuid", "nodev"} <= set(options), options
            return
        # gVisor's /proc/mounts shows neither flag, and its kernel lets the box make device
        # nodes: they reach gVisor's own devices only, never the host's (/dev/mem, a disk,
        # the kernel's log); a setuid file gains nothing (below).
        for name, kind, major, minor in (
            ("mem", "c", 1, 1),
            ("kmsg", "c", 1, 11),
            ("disk", "b", 8, 0),
        ):
            node = f"{place}/{name}"
            opened = await box.execute(f"mknod {node} {kind} {major} {minor} && head -c 1 {node}")
            assert opened.exit_code != 0
            assert "No such device" in opened.stderr_text, opened.stderr_text


@pytest.mark.parametrize("backend", WITH_HOST_DIRECTORY)
@pytest.mark.skipif(os.geteuid() != 0, reason="a root-owned setuid file needs root on the host")
async def test_a_setuid_root_file_in_the_workspace_gains_no_privilege(
    engine: Engine, box_owned_dir: Path
) -> None:
    suid = compile_euid(box_owned_dir / "suid")
    os.chown(suid, 0, 0)
    suid.chmod(0o6755)
    async with engine.session(engine.spec(workspace=str(box_owned_dir))) as box:
        probe = await box.execute(ExecRequest(cmd=["/workspace/suid"]))
        assert (probe.exit_code, probe.stdout_text) == (0, "1000 1000\n"), probe.stderr_text
        copied = await box.execute("cp -p /workspace/suid /tmp/suid; /tmp/suid")
        assert copied.stdout_text == "1000 1000\n", copied.stderr_text


GO_PACKAGE = {
    "go.mod": "module example.test/sum\n\ngo 1.19\n",
    "sum.go": "package sum\n\nfunc Sum(a, b int) int { return a + b }\n",
    "sum_test.go": (
        'package sum\n\nimport "testing"\n\n'
        'func TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal("sum")\n\t}\n}\n'
    ),
}
CRATE = {
    "Cargo.toml": '[package]\nname = "sum"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "pub fn sum(a: i32, b: i32) -> i32 { a + b }\n\n"
        "#[cfg(test)]\nmod tests {\n    #[test]\n"
        "    fn adds() { assert_eq!(super::sum(2, 3), 5); }\n}\n"
    ),
}


@pytest.mark.parametrize("backend", [pytest.param("process", marks=pytest.mark.bwrap)])
@pytest.mark.parametrize(
    ("tool", "files", "command", "passed"),
    [
        ("go", GO_PACKAGE, "GOCACHE=/tmp/go-cache GOPATH=/tmp/go GOFLAGS= go test ./...", "ok"),
        ("cargo", CRATE, "CARGO_HOME=/tmp/cargo cargo test --offline -q", "test result: ok"),
    ],
)
async def test_compiled_tests_run_in_a_box(
    engine: Engine, tool: str, files: dict[str, str], command: str, passed: str
) -> None:
    """The tools themselves, on bubblewrap, which sees the host's (the devbox image has
    neither): go builds its test binary in /tmp, cargo in /workspace/target."""
    if shutil.which(tool, path="/usr/bin:/bin") is None:
        pytest.skip(f"{tool} is not installed in /usr/bin (apt-get install golang-go cargo)")
    async with engine.session(engine.spec(timeout=300)) as box:
        for path, text in files.items():
            await box.put_file(path, text)
        result = await box.execute(command)
        assert result.exit_code == 0, result.stdout_text + result.stderr_text
        assert passed in result.stdout_text
