"""`golem exec`: run code, a script or a command in a fresh box, streaming its output: the
box's bytes to this process's stdout and stderr unchanged. With ``[remote] url`` set, the box
runs on that golem server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer
from rich.table import Table

from golem.cli import options
from golem.core.console import say, say_json, styled, terminal
from golem.core.errors import InvalidRequest

if TYPE_CHECKING:
    from golem.core.events import NetworkEvent
    from golem.sandbox import Engine, ExecRequest, ExitEvent

__all__ = ["build_request", "exec_command"]


def _stdin_bytes() -> bytes | None:
    if sys.stdin is None or sys.stdin.isatty():
        return None
    try:
        data = sys.stdin.buffer.read()
    except (OSError, ValueError):
        return None
    return data or None


def build_request(
    args: list[str], code: str | None, runtime: str | None, stdin: bytes | None
) -> ExecRequest:
    """Turn `-c CODE`, `FILE` or `CMD...` into a request, with a clear error for misuse."""
    from pydantic import ValidationError

    from golem.sandbox import ExecRequest
    from golem.sandbox.models import RUNTIME_BY_SUFFIX

    fields: dict[str, object] = {"stdin": stdin}
    if code is not None:
        if args:
            raise InvalidRequest("give either -c CODE or a command, not both")
        fields.update(code=code, runtime=runtime or "python")
    elif len(args) == 1 and Path(args[0]).suffix in RUNTIME_BY_SUFFIX and Path(args[0]).is_file():
        script = Path(args[0])
        fields.update(code=script.read_text(), filename=script.name, runtime=runtime)
    elif args:
        if runtime is not None:
            raise InvalidRequest("--runtime goes with -c CODE or a script FILE, not a command")
        fields.update(cmd=args)
    else:
        raise InvalidRequest("nothing to run: give -c CODE, a script FILE, or -- CMD...")
    try:
        return ExecRequest.model_validate(fields)
    except ValidationError as exc:
        raise InvalidRequest(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None


def exec_command(
    args: list[str] = typer.Argument(None, help="A script FILE, or -- CMD ARGS..."),
    code: str | None = typer.Option(None, "-c", "--code", help="Code to run with --runtime."),
    runtime: str | None = typer.Option(None, "--runtime", help="python, node, bash or sh."),
    json_output: bool = typer.Option(False, "--json", help="Print the ExecResult as JSON."),
    backend: str | None = options.BACKEND,
    tier: str | None = options.TIER,
    containers: bool = options.CONTAINERS,
    image: str | None = options.IMAGE,
    network: str | None = options.NETWORK,
    allow: list[str] | None = options.ALLOW,
    deny: list[str] | None = options.DENY,
    allow_cidr: list[str] | None = options.ALLOW_CIDR,
    allow_port: list[int] | None = options.ALLOW_PORT,
    net_log: bool = typer.Option(
        False, "--net-log", help="Print the egress proxy's decisions after the run."
    ),
    memory: str | None = options.MEMORY,
    cpus: float | None = options.CPUS,
    pids: int | None = options.PIDS,
    timeout: float | None = options.TIMEOUT,
    env: list[str] | None = options.ENV,
    secret: list[str] | None = options.SECRET,
    workspace: Path | None = options.WORKSPACE,
    workdir: str | None = options.WORKDIR,
    config_file: Path | None = options.CONFIG,
) -> None:
    """Run code, a script or a command in a fresh box; exit with its exit code."""
    from golem.sandbox import make_engine

    flags = options.BoxFlags(
        backend,
        image,
        network,
        memory,
        cpus,
        pids,
        timeout,
        env,
        secret,
        workspace,
        config_file,
        workdir,
        allow=allow,
        deny=deny,
        allow_cidr=allow_cidr,
        allow_port=allow_port,
        tier=tier,
        containers=containers,
    )
    config = flags.load()
    request = build_request(list(args or []), code, runtime, _stdin_bytes())
    engine = make_engine(config)
    # The flags given, for a server's box too (a local engine has them in its defaults).
    spec = flags.defaults
    if json_output:
        raise typer.Exit(asyncio.run(_run_json(engine, request, spec)))
    raise typer.Exit(asyncio.run(_run_streaming(engine, request, spec, net_log=net_log)))


async def _run_json(engine: Engine, request: ExecRequest, spec: dict[str, Any]) -> int:
    async with engine:
        result = await engine.execute(request, spec)
    say_json(result)
    return result.exit_code


async def _run_streaming(
    engine: Engine, request: ExecRequest, spec: dict[str, Any], *, net_log: bool
) -> int:
    from golem.core.events import NetworkEvent
    from golem.sandbox import ExitEvent, OutputEvent

    exit_code = 1
    decisions: list[NetworkEvent] = []
    async with engine, contextlib.aclosing(engine.stream(request, spec)) as events:
        async for event in events:
            if isinstance(event, OutputEvent):
                _write_bytes(sys.stdout if event.type == "stdout" else sys.stderr, event.data)
            elif isinstance(event, ExitEvent):
                exit_code = event.exit_code
                _report_limits(event)
            elif isinstance(event, NetworkEvent):
                decisions.append(event)
            else:
                say(f"golem: {event.message}", stderr=True)
    if net_log:
        print_network_log(decisions)
    return exit_code


def _write_bytes(target: TextIO, data: bytes) -> None:
    """Write the box's bytes as they are (the text layer's buffer is flushed first, to keep
    the order of what golem itself wrote)."""
    target.flush()
    target.buffer.write(data)
    target.buffer.flush()


def print_network_log(decisions: list[NetworkEvent]) -> None:
    """The egress proxy's decisions as a table on stderr."""
    table = Table("DECISION", "HOST", "PORT", "RULE", "ADDRESS", "UP", "DOWN", box=None)
    for event in decisions:
        brokered = f" +{event.brokered}" if event.brokered else ""
        verdict = styled(f"{'allowed' if event.allowed else 'refused'}{brokered}",
                         "green" if event.allowed else "red")  # fmt: skip
        table.add_row(
            verdict,
            event.host,
            str(event.port),
            event.rule,
            event.address or "-",
            str(event.bytes_up),
            str(event.bytes_down),
        )
    console = terminal(stderr=True)
    console.print(f"golem: network log ({len(decisions)} decisions)")
    if decisions:
        console.print(table)


def _report_limits(event: ExitEvent) -> None:
    notes = []
    if event.timed_out:
        notes.append(f"timed out after {event.duration:.1f}s")
    if event.idle_timed_out:
        notes.append("killed after printing nothing for too long (idle timeout)")
    if event.oom_killed:
        notes.append("killed for exceeding its memory limit")
    if event.truncated:
        notes.append("output truncated at the output limit")
    if notes and os.environ.get("GOLEM_QUIET") is None:
        say(f"golem: {'; '.join(notes)}", stderr=True)
