"""Real MCP servers from the npm registry for the toolshed's tests: installed once per
name and version in a cache directory, copied into a box (a box sees the host's /usr, so
its node, but no host directory of ours), or run on the host's loopback for HTTP."""

from __future__ import annotations

import asyncio
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from golem.sandbox import Box

EVERYTHING = ("@modelcontextprotocol/server-everything", "2026.8.31")
MEMORY = ("@modelcontextprotocol/server-memory", "2026.8.31")
TIME = ("mcp-server-time", "2026.10.19")  # from PyPI
CACHE = Path(os.environ.get("GOLEM_TEST_CACHE", Path.home() / ".cache" / "golem-tests")) / "mcp"
BOX_DIR = "/tmp/mcp"


def npm_package(name: str, version: str) -> Path:
    """The package installed (with its dependencies) under the cache, once per version;
    the directory holding its ``node_modules``."""
    target = CACHE / re.sub(r"[^A-Za-z0-9.-]", "_", f"{name}@{version}")
    if (target / "node_modules" / name / "package.json").is_file():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    subprocess.run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(partial),
            f"{name}@{version}",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


NODE = "20.20.2"
"""The node fetched from the npm registry (node-linux-<arch>) when the host's is older than
a client needs (Debian's nodejs is 18)."""


def node_at_least(major: int) -> str:
    """A node binary of at least ``major``: the host's, or the npm registry's build of
    ``NODE`` (cached like a package)."""
    host = shutil.which("node")
    if host is not None:
        shown = subprocess.run([host, "--version"], capture_output=True, text=True, check=True)
        if int(shown.stdout.strip().lstrip("v").split(".")[0]) >= major:
            return host
    arch = {"x86_64": "x64", "aarch64": "arm64"}[platform.machine()]
    package = f"node-linux-{arch}"
    return str(npm_package(package, NODE) / "node_modules" / package / "bin" / "node")


def pypi_package(name: str, version: str) -> Path:
    """The package installed (with its dependencies) under the cache with ``pip install
    --target``, once per version, for the boxes' python3 (the host's /usr/bin/python3,
    whose minor version may not be this interpreter's: its wheels are chosen)."""
    box_python = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    target = CACHE / f"pypi-{name}-{version}-py{box_python}"
    if (target / ".installed").is_file():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--target",
            str(partial),
            "--python-version",
            box_python,
            "--only-binary=:all:",
            f"{name}=={version}",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (partial / ".installed").touch()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def entry(package: tuple[str, str], root: str) -> str:
    """The server's main script under ``root`` (a copy of its cache directory)."""
    name, _ = package
    return f"{root}/node_modules/{name}/dist/index.js"


async def copy_into(box: Box, package: tuple[str, str], *, pypi: bool = False) -> str:
    """Copy an installed package into the box; the box directory holding it."""
    source = pypi_package(*package) if pypi else npm_package(*package)
    target = f"{BOX_DIR}/{source.name}"
    await box.execute(["mkdir", "-p", target])
    await box.put_dir(source, target)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def everything_over_http() -> Iterator[int]:
    """server-everything serving streamable HTTP on loopback; its port once it listens."""
    root = npm_package(*EVERYTHING)
    port = free_port()
    process = subprocess.Popen(
        ["node", entry(EVERYTHING, str(root)), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:  # it says when it listens
            if f"listening on port {port}" in line:
                break
        else:
            raise RuntimeError(f"server-everything did not start (exit {process.wait()})")
        yield port
    finally:
        process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


@dataclass
class RecordingProxy:
    """A TCP relay in front of a server that keeps every byte clients sent it."""

    upstream: int
    port: int = 0
    sent: bytearray = field(default_factory=bytearray)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)

        async def pump(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bool
        ) -> None:
            try:
                while data := await source.read(65536):
                    if record:
                        self.sent += data
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pump(reader, up_writer, True), pump(up_reader, writer, False))


@asynccontextmanager
async def recording_proxy(upstream: int) -> AsyncIterator[RecordingProxy]:
    """A RecordingProxy listening on loopback for the test's life."""
    proxy = RecordingProxy(upstream)
    server = await asyncio.start_server(proxy._relay, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    async with server:
        yield proxy
        server.close()
