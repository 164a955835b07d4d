"""Requests, results and records of the sandbox engine (the schema of every interface)."""

from __future__ import annotations

import posixpath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from golem.core.events import NetworkEvent, ResourceUsage
from golem.core.isolation import Isolation
from golem.core.spec import MAX_TIMEOUT, check_env
from golem.sandbox.records import BoxRecord

__all__ = [
    "RUNTIME_BY_SUFFIX",
    "BackgroundProcess",
    "BoxInfo",
    "BoxPath",
    "ExecRequest",
    "ExecResult",
    "ProcessOutput",
    "Runtime",
    "SnapshotInfo",
    "runtime_for_filename",
]

Runtime = Literal["python", "node", "bash", "sh"]
RUNTIME_BY_SUFFIX: dict[str, Runtime] = {
    ".py": "python",
    ".js": "node",
    ".mjs": "node",
    ".cjs": "node",
    ".sh": "sh",
    ".bash": "bash",
}
RUNTIME_PROGRAM: dict[str, str] = {"python": "python3", "node": "node", "bash": "bash", "sh": "sh"}


def _no_nul(path: str) -> str:
    if "\0" in path:
        raise ValueError(f"a path in a box may not hold a NUL byte: {path!r}")
    return path


BoxPath = Annotated[str, AfterValidator(_no_nul)]
"""A path in a box, as a request names it: no NUL byte (no system call takes one)."""


def runtime_for_filename(filename: str) -> Runtime:
    """Pick the runtime for a script from its file extension."""
    suffix = posixpath.splitext(filename)[1].lower()
    runtime = RUNTIME_BY_SUFFIX.get(suffix)
    if runtime is None:
        known = ", ".join(sorted(RUNTIME_BY_SUFFIX))
        raise ValueError(
            f"cannot tell the runtime of {filename!r} from its extension ({known}); "
            "give one with runtime= or --runtime"
        )
    return runtime


class ExecRequest(BaseModel):
    """One call in a box: exactly one of ``cmd``, ``code`` (with a runtime) or ``tool``."""

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    cmd: list[str] | str | None = Field(
        None, description="argv list, or a string run by /bin/sh -c."
    )
    code: str | None = Field(None, description="Source code run by ``runtime``.")
    runtime: Runtime | None = Field(None, description="Interpreter for ``code``.")
    filename: str | None = Field(
        None, description="Name of the script ``code`` came from; picks the runtime."
    )
    tool: dict[str, Any] | None = Field(
        None,
        description="A request of the box's file tools ({op: probe, read, ls, grep or glob, "
        "...}), answered by the supervisor itself as one JSON object on stdout.",
    )
    stdin: bytes | None = Field(None, description="Bytes fed to the call's standard input.")
    env: dict[str, str] = Field(default_factory=dict)
    workdir: BoxPath | None = Field(None, description="Inside /workspace; default: the spec's.")
    timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT, description="Seconds; default: the spec's."
    )
    idle_timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT, description="Kill after N silent seconds."
    )
    files: dict[BoxPath, bytes] = Field(
        default_factory=dict, description="Files written into the box before the call."
    )
    return_files: list[BoxPath] = Field(
        default_factory=list, description="Files read back from the box after the call."
    )

    @model_validator(mode="after")
    def _one_of_cmd_or_code(self) -> ExecRequest:
        if [self.cmd, self.code, self.tool].count(None) != 2:
            raise ValueError("give exactly one of cmd, code or tool")
        if self.cmd is not None and not self.cmd:
            raise ValueError("cmd is empty; give a command to run")
        if self.code is not None and self.runtime is None:
            if self.filename is None:
                raise ValueError("code needs a runtime (python, node, bash, sh)")
            self.runtime = runtime_for_filename(self.filename)
        return self

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        check_env(value)
        return value

    def argv(self) -> list[str]:
        """The argv that runs this request (for ``code``, the script path is appended)."""
        if self.tool is not None:
            return ["tool", str(self.tool.get("op"))]
        if self.code is not None:
            assert self.runtime is not None  # set by the validator
            return [RUNTIME_PROGRAM[self.runtime]]
        if isinstance(self.cmd, str):
            return ["/bin/sh", "-c", self.cmd]
        assert self.cmd is not None
        return list(self.cmd)


class ExecResult(BaseModel):
    """The outcome of a call, with its output as the box's bytes (secrets masked); bytes are
    base64 in JSON. ``stdout_text`` and ``stderr_text`` decode them where text is meant."""

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    stdout: bytes
    stderr: bytes
    exit_code: int
    signal: int | None = None
    duration: float
    truncated: bool = False
    timed_out: bool = False
    idle_timed_out: bool = False
    oom_killed: bool = False
    usage: ResourceUsage = ResourceUsage()
    files: dict[str, bytes] = Field(default_factory=dict)
    network: list[NetworkEvent] = Field(
        default_factory=list,
        description="Decisions of the egress proxy during the call (filtered boxes).",
    )
    isolation: Isolation | None = Field(
        None, description="What isolation the call's box got (`golem exec --json` shows it)."
    )

    @property
    def stdout_text(self) -> str:
        """Standard output as text (bytes that are not UTF-8 become U+FFFD)."""
        return self.stdout.decode(errors="replace")

    @property
    def stderr_text(self) -> str:
        """Standard error as text (bytes that are not UTF-8 become U+FFFD)."""
        return self.stderr.decode(errors="replace")

    @property
    def ok(self) -> bool:
        """True when the call exited 0 and hit no limit."""
        return self.exit_code == 0 and not (self.timed_out or self.idle_timed_out)


class BackgroundProcess(BaseModel):
    """A process started with ``Box.start`` that runs on while other calls happen."""

    id: str
    argv: list[str]
    pid: int
    running: bool
    exit_code: int | None = None
    output_bytes: int = 0


class ProcessOutput(BaseModel):
    """Output of a background process since an offset (stdout and stderr interleaved), the
    box's bytes (secrets masked); base64 in JSON.

    The box keeps a process's latest ``max_output_bytes``; ``data`` begins at ``start``,
    past the offset asked for when bytes not read yet were dropped."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    data: bytes
    start: int = 0
    offset: int
    running: bool
    exit_code: int | None = None
    truncated: bool = False

    @property
    def text(self) -> str:
        """The output as text (bytes that are not UTF-8 become U+FFFD)."""
        return self.data.decode(errors="replace")


class BoxInfo(BaseModel):
    """A box golem knows of (live or left behind), as recorded in the state directory."""

    id: str
    backend: str
    owner_pid: int
    owner_alive: bool
    created: float
    image: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    isolation: Isolation | None = None

    @classmethod
    def of(cls, record: BoxRecord) -> BoxInfo:
        """What a box's record tells of it."""
        fields = record.model_dump(include=set(cls.model_fields) - {"owner_alive"})
        return cls(**fields, owner_alive=record.owner_alive)


class SnapshotInfo(BaseModel):
    """A snapshot of a box: a name of its tenant's for the content of its writable trees."""

    name: str = Field(description="Its name among its tenant's snapshots.")
    tenant: str = Field(description="The tenant whose boxes alone can start from it.")
    digest: str = Field(description="sha256 of its archive: its content ('sha256:' names it).")
    size: int = Field(description="Bytes of its archive.")
    entries: int = Field(description="Files, directories and links it holds.")
    created: float = Field(description="When it was taken (Unix time).")
    backend: str = Field(description="The backend of the box it was taken from.")
    image: str | None = Field(description="That box's image (None: the backend's default).")
    roots: list[str] = Field(
        description="The trees it holds anything in, of workspace, tmp and dev/shm."
    )
    box_id: str = Field(description="The box it was taken from.")
