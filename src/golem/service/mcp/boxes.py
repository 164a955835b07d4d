"""The box tools: open a box (a session), run commands in it, read and write its files,
list and close boxes. Each calls what the session routes call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from golem.sandbox import ExecRequest
from golem.service.api.sessions import (
    BoxSpecFields,
    SessionCreate,
    SessionInfo,
    asked,
    checked_box,
    session_box,
)
from golem.service.mcp.host import acting, tool

__all__ = ["BOX_TOOLS"]


class BoxInfo(BaseModel):
    """A box (a session of the REST API) as the tools show it."""

    box_id: str
    image: str | None
    network: str
    created: float
    runtimes: dict[str, str]
    isolation: str | None = Field(
        None, description="What isolation the box got: its tier and how, e.g. microvm (TCG)."
    )

    @classmethod
    def of(cls, info: SessionInfo) -> BoxInfo:
        """The view of a session's info."""
        spec = info.spec
        return cls(
            box_id=info.id,
            image=spec.image,
            network=str(spec.network),
            created=info.created,
            runtimes=info.runtimes,
            isolation=str(info.isolation) if info.isolation is not None else None,
        )


class CommandOutput(BaseModel):
    """What a command did: its exit code and output (capped by the box's
    max_output_bytes; ``truncated`` says when)."""

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    duration: float


class FileContent(BaseModel):
    """A file of a box, as text (bytes that are not UTF-8 become U+FFFD)."""

    path: str
    size: int
    text: str


if TYPE_CHECKING:
    Spec = dict[str, Any]
else:  # the tool's schema is the REST API's, field by field (mypy cannot take a made model)
    Spec = BoxSpecFields

SpecArg = Annotated[
    Spec | None,
    Field(
        description="BoxSpec fields over the server's defaults, within the key's policy, as "
        "POST /v1/sessions takes them (image, network, env, setup, ...)."
    ),
]


@tool
async def box_open(ctx: Context, spec: SpecArg = None) -> BoxInfo:
    """Open a box (a sandbox that lives until box_close); returns its box_id."""
    state, principal = acting(ctx)
    body = SessionCreate.model_validate({"spec": spec or {}})
    held = await state.sessions.open(principal, asked(body.spec))
    return BoxInfo.of(SessionInfo.of(held))


@tool
async def box_exec(
    ctx: Context,
    box_id: str,
    command: Annotated[
        str | list[str], Field(description="A shell command (run by /bin/sh -c), or an argv.")
    ],
    workdir: Annotated[str | None, Field(description="Inside /workspace.")] = None,
    timeout: Annotated[float | None, Field(description="Seconds; default: the box's.")] = None,
    stdin: Annotated[str | None, Field(description="Text fed to standard input.")] = None,
    env: dict[str, str] | None = None,
) -> CommandOutput:
    """Run a command in a box to its end; its exit code, stdout and stderr."""
    state, principal = acting(ctx)
    request = ExecRequest(
        cmd=command,
        workdir=workdir,
        timeout=timeout,
        stdin=stdin.encode() if stdin is not None else None,
        env=env or {},
    )
    result = await checked_box(state, principal, box_id, request).execute(request)
    return CommandOutput(
        exit_code=result.exit_code,
        stdout=result.stdout_text,
        stderr=result.stderr_text,
        truncated=result.truncated,
        timed_out=result.timed_out or result.idle_timed_out,
        duration=result.duration,
    )


@tool
async def box_read_file(ctx: Context, box_id: str, path: str) -> FileContent:
    """Read a file of a box (at most the box's max_file_bytes)."""
    state, principal = acting(ctx)
    content = await session_box(state, principal, box_id).get_file(path)
    return FileContent(path=path, size=len(content), text=content.decode(errors="replace"))


@tool
async def box_write_file(
    ctx: Context,
    box_id: str,
    path: str,
    text: str,
    mode: Annotated[int, Field(ge=0, le=0o7777, description="Unix permissions.")] = 0o644,
) -> FileContent:
    """Write text to a file of a box (made or replaced)."""
    state, principal = acting(ctx)
    content = text.encode()
    await session_box(state, principal, box_id).put_file(path, content, mode)
    return FileContent(path=path, size=len(content), text="")


@tool
async def box_close(ctx: Context, box_id: str) -> str:
    """Close a box: its processes end and its files are gone."""
    state, principal = acting(ctx)
    await state.sessions.close(principal, box_id)
    return f"closed {box_id}"


@tool
async def box_list(ctx: Context) -> list[BoxInfo]:
    """The boxes open for this key's tenant, oldest first."""
    state, principal = acting(ctx)
    return [BoxInfo.of(SessionInfo.of(held)) for held in state.sessions.list(principal)]


BOX_TOOLS = (box_open, box_exec, box_read_file, box_write_file, box_close, box_list)
