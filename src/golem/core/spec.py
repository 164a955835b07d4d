"""BoxSpec: what a box is made of. The same model serves config files, the API and the CLI."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from golem.core.network import EgressPolicy
from golem.core.sizes import ByteSize

__all__ = ["MAX_ID", "WORKSPACE", "BoxSpec", "NetworkMode", "parse_user", "resolve_workdir"]

WORKSPACE = "/workspace"
NetworkMode = Literal["none", "filtered", "host"]
"""``none``: no route out; ``filtered``: only through golem's egress proxy, by ``egress``;
``host``: the host's network, for trusted work only."""


MIN_TMPFS = 1024**2
"""Smallest tmpfs: a size of 0 would mount one without any limit."""
MIN_MEMORY = 8 * 1024**2
"""Smallest memory limit: 0 would mean none to Docker, and no box starts in less."""

MAX_ID = 65534
"""Highest uid or gid a box may run as: the ids a user namespace or a container maps
(65535 and (uid_t)-1 are not real ids)."""


def parse_user(value: str) -> tuple[int, int]:
    """``root``, ``uid`` or ``uid:gid`` (decimal digits only) as numeric ids; ValueError
    for anything else, or an id above ``MAX_ID``."""
    if value == "root":
        return 0, 0
    parts = value.split(":")
    if len(parts) > 2 or not all(part.isascii() and part.isdigit() for part in parts):
        raise ValueError(f"user {value!r} must be 'root' or numeric uid[:gid], e.g. 1000:1000")
    uid = int(parts[0])
    gid = int(parts[1]) if len(parts) == 2 else uid
    if uid > MAX_ID or gid > MAX_ID:
        raise ValueError(f"user {value!r}: uid and gid go from 0 to {MAX_ID}")
    return uid, gid


def resolve_workdir(workdir: str) -> str:
    """Return ``workdir`` as an absolute path inside /workspace, or raise ValueError."""
    if "\0" in workdir:
        raise ValueError(f"workdir {workdir!r} holds a NUL byte; give a path without one")
    path = posixpath.normpath(posixpath.join(WORKSPACE, workdir))
    if path != WORKSPACE and not path.startswith(WORKSPACE + "/"):
        raise ValueError(
            f"workdir {workdir!r} resolves to {path}, outside {WORKSPACE}; "
            f"give a path inside {WORKSPACE}"
        )
    return path


class BoxSpec(BaseModel):
    """Everything that defines a box. Defaults are the safe choice for unattended agents."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    image: str | None = Field(
        None,
        description="Process backend: a root file system directory (None = the host's, "
        "read-only and reduced to system directories). Docker: an image name.",
    )
    workdir: str = Field(WORKSPACE, description="Default working directory, inside /workspace.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of every call.")
    cpus: float | None = Field(1.0, gt=0, description="CPU cores (cgroup quota); None = no cap.")
    memory: ByteSize | None = Field(
        2 * 1024**3,
        ge=MIN_MEMORY,
        description="Memory limit, e.g. '512m' (at least 8m); None = no cap. What the box "
        "writes to its tmpfs (/workspace, /tmp, /dev/shm) counts against it: keep it above "
        "their sizes, so that a full disk cannot leave the box's supervisor without memory.",
    )
    pids: int | None = Field(256, ge=8, description="Maximum processes and threads in the box.")
    timeout: float = Field(300.0, gt=0, description="Default time limit of a call, seconds.")
    idle_timeout: float | None = Field(
        None, gt=0, description="Kill a call that prints nothing for this many seconds."
    )
    max_output_bytes: ByteSize = Field(
        4 * 1024**2, ge=1, description="Cap on a call's stdout+stderr; past it, truncated."
    )
    max_file_bytes: ByteSize = Field(
        256 * 1024**2,
        ge=1,
        description="Largest file the host takes back from the box (a download, a call's "
        "return_files in all, one file of a directory or of a run's changes); past it, "
        "refused.",
    )
    max_takeback_bytes: ByteSize = Field(
        2 * 1024**3,
        ge=1,
        description="Most bytes the host takes back from the box in one transfer (a "
        "directory, a run's changes); past it, refused.",
    )
    workspace: Path | None = Field(
        None, description="Host directory bound as /workspace; None = a private tmpfs."
    )
    workspace_size: ByteSize = Field(
        1024**3, ge=MIN_TMPFS, description="Size of the /workspace tmpfs (at least 1m)."
    )
    tmp_size: ByteSize = Field(
        256 * 1024**2, ge=MIN_TMPFS, description="Size of the /tmp tmpfs (at least 1m)."
    )
    read_only_root: bool = Field(True, description="Mount the root file system read-only.")
    user: str = Field(
        "1000:1000",
        description=f"uid[:gid] inside the box (each 0-{MAX_ID}), or 'root' (0:0); kept as "
        "'uid:gid'.",
    )
    network: NetworkMode = Field(
        "none",
        description="'none' (no route out), 'filtered' (only what `egress` allows, through "
        "golem's proxy) or 'host' (the host's network: trusted work only).",
    )
    egress: EgressPolicy = Field(
        default_factory=EgressPolicy, description="What a 'filtered' box may reach."
    )
    secrets: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Environment variables whose values are masked as *** in all output.",
    )
    setup: str | None = Field(None, description="Shell script run once when the box starts.")
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels.")

    @field_validator("workdir")
    @classmethod
    def _workdir_inside_workspace(cls, value: str) -> str:
        return resolve_workdir(value)

    @field_validator("user")
    @classmethod
    def _user_is_ids(cls, value: str) -> str:
        uid, gid = parse_user(value)
        return f"{uid}:{gid}"

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not name or "=" in name or "\0" in name or "\0" in item:
                raise ValueError(f"{name!r} is not a valid environment variable")
        return value

    @property
    def uid_gid(self) -> tuple[int, int]:
        """The numeric (uid, gid) that calls run as inside the box."""
        return parse_user(self.user)

    @property
    def is_root(self) -> bool:
        """Whether calls run with uid 0 or gid 0 inside the box, however it was spelled."""
        return 0 in self.uid_gid

    def secret_values(self) -> dict[str, str]:
        """The secrets in clear, for the box's environment only."""
        return {name: secret.get_secret_value() for name, secret in self.secrets.items()}
