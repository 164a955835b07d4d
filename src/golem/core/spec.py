"""BoxSpec: what a box is made of. The same model serves config files, the API and the CLI."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from golem.core.isolation import IsolationTier
from golem.core.network import EgressPolicy
from golem.core.sizes import ByteSize

__all__ = [
    "BOX_PATH",
    "GOLEM_HOME",
    "MAX_ID",
    "SERVER_LABELS",
    "SNAPSHOT_NAME",
    "SNAPSHOT_REF",
    "WORKSPACE",
    "BoxSpec",
    "NetworkMode",
    "check_env",
    "parse_user",
    "resolve_workdir",
]

WORKSPACE = "/workspace"
GOLEM_HOME = "/tmp/golem"
"""Where golem's own files live in a run's boxes (the venv, tool homes and caches): outside
the checkout, where no repository tool walks, so every check sees the tree the repository's
own CI sees."""
BOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The ``PATH`` of every box's commands, unless a call or the run's environment says otherwise."""
NetworkMode = Literal["none", "filtered", "host"]
"""``none``: no route out; ``filtered``: only through golem's egress proxy, by ``egress``;
``host``: the host's network, for trusted work only."""


MIN_TMPFS = 1024**2
"""Smallest tmpfs: a size of 0 would mount one without any limit."""
MIN_MEMORY = 8 * 1024**2
"""Smallest memory limit: 0 would mean none to Docker, and no box starts in less."""
MAX_SIZE = 1024**5
"""Largest size of any kind (1 PiB): bigger ones overflow what bubblewrap, the kernel
(tmpfs ``size=``, cgroup limits) or Docker's int64 fields take, and limit nothing anyway."""
MIN_CPUS = 0.01
"""Fewest CPU cores: a CFS quota of 1 ms per 100 ms period, the kernel's and Docker's floor."""
MAX_CPUS = 4096.0
"""Most CPU cores: more than any machine has, yet far below the quota the kernel takes."""
MAX_PIDS = 4194304
"""The kernel's PID_MAX_LIMIT: pids.max takes no more."""
MAX_TIMEOUT = 14 * 86400.0
"""Longest time limit, seconds (14 days): past 2**31 ms (24.8 days) the supervisor's poll
timeouts overflow and the box dies."""
MAX_ARG_STRLEN = 128 * 1024
"""The kernel's limit on one string of a new process's environment or arguments (with its
NUL): a longer ``NAME=value`` or setup script fails every exec with E2BIG."""
MAX_ENV_BYTES = 1024**2
"""Most bytes of a box's environment and secrets together (``NAME=value`` and NUL each):
half of the usual ARG_MAX, leaving room for a call's arguments."""
MAX_LABEL_BYTES = 64 * 1024
"""Most bytes of a box's labels (names and values)."""
SERVER_LABELS = "golem."
"""The prefix of the labels a golem server sets on its own boxes (``golem.tenant``,
``golem.run``): a request may not set them, unless its key is a control plane's."""
MAX_PATH = 4096
"""The kernel's PATH_MAX: the longest image, workdir or workspace path."""

SNAPSHOT_NAME = r"[a-z0-9][a-z0-9._-]{0,62}"
"""A snapshot's name: lower-case letters, digits, ``.``, ``_`` and ``-``, at most 63,
starting with a letter or digit (so never ``.`` or ``..``, nor a path)."""
SNAPSHOT_REF = rf"^(?:{SNAPSHOT_NAME}|sha256:[0-9a-f]{{64}})$"
"""How a box names a snapshot of its tenant: its name, or its content's ``sha256:`` digest."""

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
    if "\0" in workdir or len(workdir.encode()) >= MAX_PATH:
        raise ValueError(f"workdir must be a path without NUL, shorter than {MAX_PATH} bytes")
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
        min_length=1,
        max_length=MAX_PATH - 1,
        description="Process backend: a root file system directory (None = the host's, "
        "read-only and reduced to system directories). Docker: an image name.",
    )
    workdir: str = Field(WORKSPACE, description="Default working directory, inside /workspace.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of every call.")
    cpus: float | None = Field(
        1.0,
        ge=MIN_CPUS,
        le=MAX_CPUS,
        description=f"CPU cores (cgroup quota; {MIN_CPUS} to {MAX_CPUS:g}); None = no cap.",
    )
    memory: ByteSize | None = Field(
        2 * 1024**3,
        ge=MIN_MEMORY,
        le=MAX_SIZE,
        description="Memory limit, e.g. '512m' (8m to 1024t); None = no cap. What the box "
        "writes to its tmpfs (/workspace, /tmp, /dev/shm) counts against it: keep it above "
        "their sizes, so that a full disk cannot leave the box's supervisor without memory.",
    )
    pids: int | None = Field(
        256, ge=8, le=MAX_PIDS, description="Maximum processes and threads in the box."
    )
    timeout: float = Field(
        300.0,
        gt=0,
        le=MAX_TIMEOUT,
        description="Default time limit of a call, seconds (at most 14 days).",
    )
    idle_timeout: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT,
        description="Kill a call that prints nothing for this many seconds.",
    )
    max_output_bytes: ByteSize = Field(
        4 * 1024**2,
        ge=1,
        le=MAX_SIZE,
        description="Cap on a call's stdout+stderr; past it, truncated.",
    )
    max_file_bytes: ByteSize = Field(
        256 * 1024**2,
        ge=1,
        le=MAX_SIZE,
        description="Largest file the host takes back from the box (a download, a call's "
        "return_files in all, one file of a directory or of a run's changes); past it, "
        "refused.",
    )
    max_takeback_bytes: ByteSize = Field(
        2 * 1024**3,
        ge=1,
        le=MAX_SIZE,
        description="Most bytes the host takes back from the box in one transfer (a "
        "directory, a run's changes); past it, refused.",
    )
    workspace: Path | None = Field(
        None, description="Host directory bound as /workspace; None = a private tmpfs."
    )
    workspace_size: ByteSize = Field(
        1024**3,
        ge=MIN_TMPFS,
        le=MAX_SIZE,
        description="Size of the /workspace tmpfs (1m to 1024t).",
    )
    tmp_size: ByteSize = Field(
        256 * 1024**2,
        ge=MIN_TMPFS,
        le=MAX_SIZE,
        description="Size of the /tmp tmpfs (1m to 1024t).",
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
    credentials: bool = Field(
        True,
        description="Whether a 'filtered' box's proxy brokers the configured [[credentials]]; "
        "false: none (the dependency install box, which runs a repository's code online).",
    )
    secrets: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Environment variables whose values are masked as *** in all output.",
    )
    setup: str | None = Field(
        None,
        description="Shell script run once when the box starts (under 128 KiB, its "
        "kernel's limit as one argument).",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form labels.")
    snapshot: str | None = Field(
        None,
        pattern=SNAPSHOT_REF,
        description="Start the box from this snapshot of its tenant's (a name, or "
        "'sha256:<digest>'; see `golem snapshots ls`): its /workspace, /tmp and /dev/shm as "
        "they were when it was taken, in a copy of the box's own. Every backend; not "
        "with containers.",
    )
    containers: bool = Field(
        False,
        description="A private Docker-compatible engine inside the box (dockerd of the "
        "guest, its data on the guest's own disk, DOCKER_HOST set for every command): only "
        "a microvm box has one; other tiers refuse it.",
    )
    tier: IsolationTier | None = Field(
        None,
        description="The isolation tier the box needs: container, gvisor or microvm (the "
        "backend serving it is [engine.tiers.<tier>]; a tier with none configured gets the "
        "next stronger one that has); None: the default backend's (engine.backend).",
    )

    @field_validator("workdir")
    @classmethod
    def _workdir_inside_workspace(cls, value: str) -> str:
        return resolve_workdir(value)

    @field_validator("user")
    @classmethod
    def _user_is_ids(cls, value: str) -> str:
        uid, gid = parse_user(value)
        return f"{uid}:{gid}"

    @field_validator("env", "secrets")
    @classmethod
    def _env_names(cls, value: dict[str, str | SecretStr]) -> dict[str, str | SecretStr]:
        check_env(
            {n: v.get_secret_value() if isinstance(v, SecretStr) else v for n, v in value.items()}
        )
        return value

    @field_validator("setup")
    @classmethod
    def _setup_fits_an_argument(cls, value: str | None) -> str | None:
        if value is not None and len(value.encode()) + 1 > MAX_ARG_STRLEN:
            raise ValueError(
                f"the setup script is longer than the kernel takes as one argument "
                f"({MAX_ARG_STRLEN // 1024} KiB); upload a script file and run that instead"
            )
        return value

    @field_validator("labels")
    @classmethod
    def _labels_small(cls, value: dict[str, str]) -> dict[str, str]:
        size = sum(len(name.encode()) + len(item.encode()) for name, item in value.items())
        if size > MAX_LABEL_BYTES:
            raise ValueError(f"labels hold {size} bytes; at most {MAX_LABEL_BYTES} are kept")
        return value

    @field_validator("workspace")
    @classmethod
    def _workspace_is_a_path(cls, value: Path | None) -> Path | None:
        if value is not None and ("\0" in str(value) or len(bytes(value)) >= MAX_PATH):
            raise ValueError(f"workspace must be a path without NUL, under {MAX_PATH} bytes")
        return value

    @field_validator("image")
    @classmethod
    def _image_is_a_name(cls, value: str | None) -> str | None:
        if value is not None and not value.isprintable():
            raise ValueError("an image is a name or a directory, without control characters")
        return value

    @model_validator(mode="after")
    def _environment_fits(self) -> BoxSpec:
        check_env({**self.env, **self.secret_values()})
        return self

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


def check_env(env: Mapping[str, str]) -> None:
    """ValueError unless ``env`` can be a new process's environment: names without ``=`` or
    NUL, values without NUL, each ``NAME=value`` within MAX_ARG_STRLEN, all within
    MAX_ENV_BYTES."""
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"{_shown(name)!r} is not a valid environment variable")
        if _env_entry_bytes(name, value) > MAX_ARG_STRLEN:
            raise ValueError(
                f"{_shown(name)}=... is longer than the kernel takes for one variable "
                f"({MAX_ARG_STRLEN // 1024} KiB); pass large data as a file instead"
            )
    size = sum(_env_entry_bytes(name, value) for name, value in env.items())
    if size > MAX_ENV_BYTES:
        raise ValueError(
            f"the environment holds {size} bytes; it takes at most "
            f"{MAX_ENV_BYTES // 1024**2} MiB: pass large data as a file instead"
        )


def _env_entry_bytes(name: str, value: str) -> int:
    """What ``NAME=value`` takes of a new process's environment, with its NUL."""
    return len(name.encode()) + 1 + len(value.encode()) + 1


def _shown(name: str) -> str:
    return name if len(name) <= 64 else name[:64] + "..."
