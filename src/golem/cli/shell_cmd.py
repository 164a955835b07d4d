"""`golem shell`: an interactive shell on a real pseudo-terminal inside a box."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import termios
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from golem.cli import options
from golem.core.errors import InvalidRequest

if TYPE_CHECKING:
    from golem.sandbox import Box, Engine, ExecRequest, Terminal

__all__ = ["shell_command"]


def shell_command(
    backend: str | None = options.BACKEND,
    tier: str | None = options.TIER,
    containers: bool = options.CONTAINERS,
    image: str | None = options.IMAGE,
    network: str | None = options.NETWORK,
    allow: list[str] | None = options.ALLOW,
    deny: list[str] | None = options.DENY,
    allow_cidr: list[str] | None = options.ALLOW_CIDR,
    allow_port: list[int] | None = options.ALLOW_PORT,
    memory: str | None = options.MEMORY,
    cpus: float | None = options.CPUS,
    pids: int | None = options.PIDS,
    env: list[str] | None = options.ENV,
    secret: list[str] | None = options.SECRET,
    workspace: Path | None = options.WORKSPACE,
    config_file: Path | None = options.CONFIG,
) -> None:
    """Open an interactive shell in a fresh box (needs a terminal)."""
    from golem.sandbox import make_engine

    if not os.isatty(sys.stdin.fileno()):
        raise InvalidRequest("golem shell needs a terminal on standard input; use golem exec")
    flags = options.BoxFlags(
        backend,
        image,
        network,
        memory,
        cpus,
        pids,
        None,
        env,
        secret,
        workspace,
        config_file,
        allow=allow,
        deny=deny,
        allow_cidr=allow_cidr,
        allow_port=allow_port,
        tier=tier,
        containers=containers,
    )
    raise typer.Exit(asyncio.run(_shell(make_engine(flags.load()))))


async def _shell(engine: Engine) -> int:
    async with engine, engine.session() as box:
        terminal = await box.open_pty(_shell_request(box))
        with _raw_terminal():
            await _resize(terminal)
            return await _pump(terminal)


def _shell_request(box: Box) -> ExecRequest:
    from golem.sandbox import ExecRequest

    program = "/bin/bash" if "bash" in box.runtimes else "/bin/sh"
    env = {"TERM": os.environ.get("TERM", "xterm-256color"), "PS1": r"golem:\w\$ "}
    return ExecRequest(cmd=[program, "-i"], env=env, timeout=None)


@contextlib.contextmanager
def _raw_terminal() -> Iterator[None]:
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd, termios.TCSANOW)  # keep what the user typed ahead
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


async def _resize(terminal: Terminal) -> None:
    size = shutil.get_terminal_size()
    await terminal.resize(size.lines, size.columns)


async def _pump(terminal: Terminal) -> int:
    loop = asyncio.get_running_loop()
    stdin_fd = sys.stdin.fileno()
    pending: set[asyncio.Task[None]] = set()

    def on_input() -> None:
        data = os.read(stdin_fd, 4096)
        if data:
            task = loop.create_task(terminal.write(data))
            pending.add(task)
            task.add_done_callback(pending.discard)

    def on_winch() -> None:
        task = loop.create_task(_resize(terminal))
        pending.add(task)
        task.add_done_callback(pending.discard)

    loop.add_reader(stdin_fd, on_input)
    loop.add_signal_handler(signal.SIGWINCH, on_winch)
    try:
        while (data := await terminal.read()) is not None:
            view = memoryview(data)
            while view:  # a write to a pipe or a terminal may take part of it
                view = view[os.write(sys.stdout.fileno(), view) :]
    finally:
        loop.remove_reader(stdin_fd)
        loop.remove_signal_handler(signal.SIGWINCH)
    return terminal.exit_code or 0
