"""The supervisor's source: its modules, as the oldest Python a box may have reads them,
and joined into the one string a box's python3 runs."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import socket
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from golem.sandbox.supervisor import SupervisorClient, supervisor_source
from golem.sandbox.supervisor.messages import HelloRequest

BOX_MODULES = sorted(
    entry.name
    for entry in resources.files("golem.sandbox.supervisor.box").iterdir()
    if entry.name.endswith(".py")
)
MAX_ARG_STRLEN = 128 * 1024  # Linux's limit on one argv string, terminating NUL included


def test_the_box_package_has_the_modules_the_supervisor_is_made_of() -> None:
    assert {"bootstrap.py", "framing.py", "main.py", "tools.py"} <= set(BOX_MODULES)


@pytest.mark.parametrize("name", BOX_MODULES)
def test_each_box_module_is_python_3_8_syntax(name: str) -> None:
    source = resources.files("golem.sandbox.supervisor.box").joinpath(name).read_text()
    ast.parse(source, feature_version=(3, 8))


def test_each_box_module_imports_only_the_stdlib_and_its_siblings() -> None:
    for name in BOX_MODULES:
        source = resources.files("golem.sandbox.supervisor.box").joinpath(name).read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module.split(".")[0] in sys.stdlib_module_names, (name, node.module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, (name, alias)


def test_the_joined_source_fits_one_argv_string() -> None:
    assert len(supervisor_source().encode()) < MAX_ARG_STRLEN


def test_the_joined_source_registers_modules_that_import_each_other() -> None:
    source = supervisor_source().replace(
        "from golem_supervisor.main import main\n\nmain()\n",
        "from golem_supervisor import framing, tools\n"
        "print(framing.PROTOCOL_VERSION, sorted(tools.OPS))\n",
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", source], capture_output=True, text=True, check=True
    )
    assert done.stdout == "1 ['glob', 'grep', 'ls', 'probe', 'read']\n"


async def test_the_supervisor_serves_on_a_non_blocking_stdio_socket() -> None:
    """gVisor can hand the container's stdio to the supervisor with O_NONBLOCK (a socket
    that is both stdin and stdout): the supervisor must not read EAGAIN and quit."""
    host, box = socket.socketpair()
    box.setblocking(False)  # the description the child's fds 0 and 1 share
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", "-u", "-c", supervisor_source(), stdin=box, stdout=box
    )
    box.close()
    reader, writer = await asyncio.open_connection(sock=host)
    client = SupervisorClient(reader, writer)
    try:
        await reading_or_gone(process)  # nothing sent yet: a non-blocking read has nothing
        assert process.returncode is None, "the supervisor quit before its first frame"
        hello = await client.start(30)
        assert hello.pid == process.pid
        assert (await client.request(HelloRequest()))[0] == hello
    finally:
        await client.close()
        assert await process.wait() == 0  # it ended at its channel's end, not before


async def reading_or_gone(process: asyncio.subprocess.Process, within: float = 30.0) -> None:
    """Wait until the process's main thread is in read(2), or it has exited."""
    deadline = asyncio.get_running_loop().time() + within
    syscall = Path(f"/proc/{process.pid}/syscall")
    while process.returncode is None:
        with contextlib.suppress(OSError):
            if syscall.read_text().split()[0] == "0":  # read
                return
        assert asyncio.get_running_loop().time() < deadline, "never read its channel"
        await asyncio.sleep(0.01)  # a poll of /proc, not a wait for the supervisor
