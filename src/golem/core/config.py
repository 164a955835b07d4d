"""golem's configuration: one set of pydantic models for file, environment and flags.

Layering, lowest first: model defaults < golem.toml in the user's config dir < golem.toml in
the project directory < ``GOLEM_*`` environment variables < CLI flags (``overrides``).
Nested keys use ``__`` in environment variables: ``GOLEM_ENGINE__DEFAULTS__MEMORY=1g``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from golem.core.automation_config import AutomationConfig
from golem.core.cluster_config import ClusterConfig
from golem.core.dependencies_config import DependenciesConfig, PreparedConfig
from golem.core.errors import ConfigError, NoTierBackend
from golem.core.forge_config import ForgeConfig
from golem.core.isolation import TIERS, IsolationTier, at_least, tier_of
from golem.core.model_config import ModelsConfig
from golem.core.network import Credential, NetworkConfig
from golem.core.server_config import RemoteConfig, ServerConfig
from golem.core.sizes import ByteSize
from golem.core.spec import BoxSpec
from golem.core.toolshed_config import ToolshedConfig

__all__ = [
    "BACKEND_TYPES",
    "BackendConfig",
    "DockerBackendConfig",
    "EngineConfig",
    "GolemConfig",
    "GvisorBackendConfig",
    "ImageRecipe",
    "MicroVMBackendConfig",
    "PoolConfig",
    "ProcessBackendConfig",
    "config_files",
    "default_state_dir",
    "load_config",
]

DEFAULT_HOST_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]


def default_state_dir() -> Path:
    """Where golem keeps box records and workspaces: /var/lib/golem for root, else XDG."""
    if os.geteuid() == 0:
        return Path("/var/lib/golem")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "golem"


class ProcessBackendConfig(BaseModel):
    """The bubblewrap backend: no daemon, namespaces + seccomp + cgroups."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["process"] = "process"
    bwrap: str = Field("bwrap", description="The bubblewrap executable.")
    run_as: str = Field(
        "nobody",
        description="Host user that bubblewrap runs as when golem runs as root, so that a "
        "box never holds root's permissions on the host.",
    )
    host_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HOST_PATHS),
        description="Host directories visible read-only when no image is given.",
    )
    seccomp: bool = Field(True, description="Load golem's default-deny seccomp filter.")
    cgroups: Literal["auto", "off"] = Field(
        "auto", description="Enforce memory/pids/cpu with cgroups (v2 or v1) when available."
    )
    python: str = Field("python3", description="Interpreter in the box that runs the supervisor.")


class DockerBackendConfig(BaseModel):
    """The Docker backend: the Docker Engine API (or Podman's compatible socket)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["docker"] = "docker"
    docker_host: str | None = Field(
        None,
        description="Engine socket, e.g. unix:///run/podman/podman.sock; None: DOCKER_HOST "
        "or the default socket.",
    )
    runtime: str | None = Field(
        None,
        description="OCI runtime of the boxes, by the name the engine knows it by: runsc "
        "for gVisor (scripts/ensure-dockerd registers it with dockerd, "
        "etc/podman-containers.conf with Podman); None: the engine's default (runc).",
    )
    image: str = Field(
        "golem/devbox:latest",
        description="Image of boxes whose spec names none (`golem image bootstrap` builds it).",
    )
    python: str = Field("python3", description="Interpreter in the image for the supervisor.")
    seccomp: Literal["golem", "engine"] = Field(
        "golem",
        description="golem: golem's default-deny profile, the same as the process backend's "
        "and stricter than the engine's; engine: the engine's own default profile.",
    )


def default_gvisor_dir() -> Path:
    """Where gVisor boxes' bundles live: /run/golem-gvisor for root, else the user's
    runtime directory."""
    if os.geteuid() == 0:
        return Path("/run/golem-gvisor")
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "golem-gvisor" if base else Path(f"/tmp/golem-gvisor-{os.geteuid()}")


class GvisorBackendConfig(BaseModel):
    """The gVisor backend: runsc started by golem itself (no daemon), a user-space kernel
    between the box and the host's."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["gvisor"] = "gvisor"
    runsc: str = Field("runsc", description="The runsc executable (Debian's package: runsc).")
    platform: Literal["auto", "ptrace", "kvm", "systrap"] = Field(
        "auto",
        description="How gVisor traps the box's system calls; auto: the fastest one that "
        "starts a sandbox on this host, found by trying (kvm, systrap, then ptrace).",
    )
    run_as: str = Field(
        "nobody",
        description="Host user that runsc, its sandbox and its gofer run as when golem runs "
        "as root (runsc --rootless), so that neither holds root's permissions on the host.",
    )
    host_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HOST_PATHS),
        description="Host directories visible read-only when no image is given.",
    )
    cgroups: Literal["auto", "off"] = Field(
        "auto", description="Enforce memory/pids/cpu with cgroups (v2 or v1) when available."
    )
    seccomp: bool = Field(
        True,
        description="Have gVisor's kernel enforce golem's default-deny seccomp filter (the "
        "process backend's) on the box; a signal to the supervisor is refused either way.",
    )
    python: str = Field("python3", description="Interpreter in the box that runs the supervisor.")
    runtime_dir: Path = Field(
        default_factory=default_gvisor_dir,
        description="Host directory for each box's OCI bundle and runsc's state.",
    )


def default_microvm_dir() -> Path:
    """Where the microvm backend keeps its guest kernel, initramfs and root disks."""
    return default_state_dir() / "microvm"


class MicroVMBackendConfig(BaseModel):
    """The microVM backend: each box is a QEMU virtual machine with its own guest kernel."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["microvm"] = "microvm"
    qemu: str = Field("qemu-system-x86_64", description="The QEMU system emulator.")
    accel: Literal["auto", "kvm", "tcg"] = Field(
        "auto",
        description="auto: KVM where a guest boots with it on this host (tried once, "
        "remembered), else TCG emulation (slow); kvm or tcg: that one only.",
    )
    kernel: Path | None = Field(
        None,
        description="Guest kernel (a bzImage with virtio as modules beside it, as Debian's "
        "packages ship); None: Debian's cloud kernel, extracted into assets_dir.",
    )
    kernel_package: str = Field(
        "linux-image-cloud-amd64",
        description="Debian package of the guest kernel when `kernel` is None (fetched with "
        "apt-get download, unpacked with dpkg-deb; never installed on the host).",
    )
    assets_dir: Path = Field(
        default_factory=default_microvm_dir,
        description="Where golem keeps guest kernels, initramfs images and root disks, "
        "each under a content hash.",
    )
    image: Path | None = Field(
        None,
        description="Root file system directory of boxes whose spec names none; None: golem's "
        "devbox (`golem image bootstrap --no-docker` makes it under state_dir/images).",
    )
    run_as: str = Field(
        "nobody",
        description="Host user that QEMU runs as when golem runs as root (QEMU also drops "
        "into an empty chroot and a seccomp sandbox).",
    )
    python: str = Field("python3", description="Interpreter in the image for the supervisor.")
    seccomp: bool = Field(
        True, description="Load golem's default-deny seccomp filter in the guest too."
    )
    boot_timeout: float = Field(
        120.0, gt=0, description="Seconds a guest may take to boot to its supervisor."
    )
    containers_disk: ByteSize = Field(
        16 * 1024**3,
        ge=256 * 1024**2,
        le=1024**4,
        description="Size of the disk of a box's container engine (`containers`): a sparse, "
        "nameless file on this host, as big as what the box's images and containers write, "
        "gone with the box.",
    )


def _backend_type(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("type", "process"))
    return str(getattr(value, "type", "process"))


BackendConfig = Annotated[
    Annotated[ProcessBackendConfig, Tag("process")]
    | Annotated[DockerBackendConfig, Tag("docker")]
    | Annotated[GvisorBackendConfig, Tag("gvisor")]
    | Annotated[MicroVMBackendConfig, Tag("microvm")],
    Discriminator(
        _backend_type,
        custom_error_type="backend_type",
        custom_error_message="the backend type must be process, docker, gvisor or microvm",
    ),
]
"""Union of the backend configs, discriminated by ``type`` (``process`` when omitted)."""
BACKEND_TYPES: tuple[str, ...] = tuple(
    str(get_args(member)[0].model_fields["type"].default)
    for member in get_args(get_args(BackendConfig)[0])
)
"""The ``type`` of every backend this golem has (each member of ``BackendConfig``)."""


class ImageRecipe(BaseModel):
    """A devbox image: a base, packages and a setup script (``[[images]]``)."""

    model_config = ConfigDict(extra="forbid")

    tag: str = Field(description="Name of the image to build, e.g. my-org/python-devbox:1.")
    base: str = Field("golem/devbox:latest", description="Image to start from.")
    install: list[str] = Field(
        default_factory=list, description="Debian packages, or pip:NAME / npm:NAME."
    )
    setup: str | None = Field(None, description="Shell script run as root after installing.")


class PoolConfig(BaseModel):
    """Warm boxes: started ahead of need, and wiped after use to serve the next session.

    ``fast`` wipes a box when it is released, so the next session gets it at once;
    ``secure`` keeps released boxes aside and wipes them again as they are handed out.
    A wipe kills every process, empties /workspace, /tmp and /dev/shm, removes System V
    IPC objects and resets the environment. Boxes with a host workspace are never pooled.
    Boxes from a snapshot are kept warm too, the snapshot already unpacked, per tenant,
    shape and snapshot (``snapshot_boxes``, ``max_snapshot_boxes``); ``max_idle`` and
    ``max_age`` stop them as any pooled box.
    """

    model_config = ConfigDict(extra="forbid")

    strategy: Literal["fast", "secure"] = "fast"
    clean: int = Field(2, ge=0, description="Ready boxes kept per box shape (0: no pool).")
    dirty: int = Field(2, ge=0, description="Released boxes kept aside (secure strategy).")
    max_idle: float | None = Field(
        600.0, gt=0, description="Seconds a pooled box may wait before it is stopped."
    )
    max_age: float | None = Field(
        7200.0, gt=0, description="Seconds any box may live; older ones are stopped."
    )
    snapshot_boxes: int = Field(
        1,
        ge=0,
        description="Warm boxes kept started from each snapshot a session used, per tenant, "
        "box shape and snapshot digest (0: every box from a snapshot gets a fresh copy).",
    )
    max_snapshot_boxes: int = Field(
        8,
        ge=0,
        description="Warm boxes from snapshots kept in all (every tenant's and snapshot's).",
    )


class EngineConfig(BaseModel):
    """The sandbox engine: which backend serves each isolation tier, the defaults of every
    box, the warm pool."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendConfig = Field(
        default_factory=ProcessBackendConfig,
        description="The default backend: it serves boxes that name no tier, and its own "
        "tier (process and docker: container; docker with runsc: gvisor).",
    )
    tiers: dict[IsolationTier, BackendConfig] = Field(
        default_factory=dict,
        description="The backend serving each other isolation tier on this host, e.g. "
        '[engine.tiers.microvm] type = "microvm"; engine.backend serves its own tier.',
    )
    defaults: BoxSpec = Field(default_factory=BoxSpec)
    pool: PoolConfig = Field(default_factory=PoolConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    max_attempts: int = Field(
        4,
        ge=1,
        le=16,
        description="Attempts one run may make at most (best-of-N: `golem run --attempts`, "
        "the API's attempts, a blueprint agent node's attempts); more is refused.",
    )
    attempt_boxes: int = Field(
        2,
        ge=1,
        description="Attempts of one run that work at once, each in a box of its own.",
    )
    judge_attempts: bool = Field(
        False,
        description="Best-of-N: when verified attempts tie on their passing checks, one "
        "call of the agent node's model chooses among them from their diffs and check "
        "results (before the smallest diff decides); an agent node's judge overrides it.",
    )

    @property
    def default_tier(self) -> IsolationTier:
        """The tier of ``backend``: what a box that names none gets."""
        return tier_of(self.backend)

    def tier_backends(self) -> dict[IsolationTier, BackendConfig]:
        """The backend of every tier this host serves, weakest tier first."""
        served = {**self.tiers, self.default_tier: self.backend}
        return {tier: served[tier] for tier in TIERS if tier in served}

    def weaker_backends(self) -> list[str]:
        """Each tier whose configured backend isolates weaker than the tier (a process
        backend under [engine.tiers.microvm]), said as what to fix: its boxes record what
        they really got, but a policy asking for that tier is not met."""
        return [
            f"engine.tiers.{tier}: a {backend.type} backend isolates as {tier_of(backend)}, "
            f"weaker than {tier}; configure a {tier} backend there"
            for tier, backend in self.tiers.items()
            if not at_least(tier_of(backend), tier)
        ]

    def serving(self, tier: IsolationTier | None) -> IsolationTier:
        """The tier that serves a box needing ``tier`` (None: the default): that tier's
        backend, else the next stronger one this host has; NoTierBackend when none is."""
        if tier is None:
            return self.default_tier
        for served in self.tier_backends():
            if at_least(served, tier):
                return served
        raise NoTierBackend(
            f"no backend serves the isolation tier {tier!r} or a stronger one on this host "
            f"(it has {', '.join(self.tier_backends())}): configure one under "
            f"[engine.tiers.{tier}] (docs/sandbox.md#isolation-tiers), or ask for a tier it has"
        )


class GolemConfig(BaseSettings):
    """The whole configuration; ``golem config schema`` prints its JSON Schema."""

    model_config = SettingsConfigDict(
        env_prefix="GOLEM_",
        env_nested_delimiter="__",
        extra="forbid",
        nested_model_default_partial_update=True,
    )

    state_dir: Path = Field(default_factory=default_state_dir)
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of golem's store (GOLEM_DATABASE_URL), e.g. "
        "postgresql+psycopg://golem@db/golem; None: a SQLite file in state_dir.",
    )
    database_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds a call to the store may take before it gives up (the API then "
        "answers 503 with Retry-After); reads are retried within it.",
    )
    engine: EngineConfig = Field(default_factory=EngineConfig)
    images: list[ImageRecipe] = Field(
        default_factory=list, description="Images `golem setup` builds ([[images]])."
    )
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    dependencies: DependenciesConfig = Field(default_factory=DependenciesConfig)
    prepared: PreparedConfig = Field(default_factory=PreparedConfig)
    toolshed: ToolshedConfig = Field(default_factory=ToolshedConfig)
    forge: ForgeConfig = Field(default_factory=ForgeConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    credentials: list[Credential] = Field(
        default_factory=list,
        description="Credentials the egress proxy adds for filtered boxes ([[credentials]]).",
    )
    automations: list[AutomationConfig] = Field(
        default_factory=list,
        description="Runs golem serve starts by itself: on a schedule, a webhook or a "
        "forge's event ([[automations]]; docs/automations.md).",
    )

    @field_validator("credentials")
    @classmethod
    def _unique_credential_names(cls, credentials: list[Credential]) -> list[Credential]:
        names = [c.name for c in credentials]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"credential names must be unique: {', '.join(duplicates)}")
        return credentials

    @field_validator("automations")
    @classmethod
    def _unique_automation_names(
        cls, automations: list[AutomationConfig]
    ) -> list[AutomationConfig]:
        names = [automation.name for automation in automations]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"automation names must be unique: {', '.join(duplicates)}")
        return automations

    @model_validator(mode="after")
    def _toolshed_credentials_exist(self) -> GolemConfig:
        names = {credential.name for credential in self.credentials}
        for server in self.toolshed.servers:
            if server.credential is not None and server.credential not in names:
                raise ValueError(
                    f"toolshed server {server.name!r}: credential {server.credential!r} is "
                    f"not a [[credentials]] entry (entries: {', '.join(sorted(names)) or 'none'})"
                )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)


def config_files(project_dir: Path | None = None) -> list[Path]:
    """golem.toml files that exist, lowest priority first (user's, then the project's)."""
    user_dir = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "golem"
    candidates = [user_dir / "golem.toml", (project_dir or Path.cwd()) / "golem.toml"]
    seen: list[Path] = []
    for path in candidates:
        if path.is_file() and path.resolve() not in [p.resolve() for p in seen]:
            seen.append(path)
    return seen


def _deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}; fix the TOML syntax there") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc


def _explain(exc: ValidationError, sources: Sequence[str]) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "config"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown option; see `golem config schema` for the valid ones"
        problems.append(f"{where}: {message}")
    origin = ", ".join(sources) if sources else "defaults"
    return "invalid configuration (" + origin + "): " + "; ".join(problems)


def load_config(
    overrides: Mapping[str, Any] | None = None,
    *,
    files: Sequence[Path] | None = None,
    project_dir: Path | None = None,
) -> GolemConfig:
    """Build the effective configuration from files, environment and ``overrides``."""
    paths = list(files) if files is not None else config_files(project_dir)
    data: dict[str, Any] = {}
    for path in paths:
        data = _deep_merge(data, _read_toml(path))
    env_values = _env_layer()
    merged = _deep_merge(_deep_merge(data, env_values), overrides or {})
    sources = [str(p) for p in paths]
    if env_values:
        sources.append("GOLEM_* environment")
    if overrides:
        sources.append("command-line flags")
    try:
        return GolemConfig.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, sources)) from exc


def _env_layer() -> dict[str, Any]:
    """GOLEM_* variables as a nested mapping, parsed by pydantic-settings' own rules."""
    try:
        return dict(EnvSettingsSource(GolemConfig)())
    except SettingsError as exc:
        raise ConfigError(f"invalid GOLEM_* environment variable: {exc}") from exc
