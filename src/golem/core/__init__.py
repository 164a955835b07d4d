"""golem.core: configuration models, errors, event types, ids, sizes."""

from golem.core.config import (
    BackendConfig,
    DockerBackendConfig,
    EngineConfig,
    GolemConfig,
    ImageRecipe,
    PoolConfig,
    ProcessBackendConfig,
    load_config,
)
from golem.core.errors import (
    BackendUnavailable,
    BoxCrashed,
    ConfigError,
    ExecTimeout,
    GolemError,
    ImageNotFound,
    InvalidRequest,
    ProtocolError,
    RuntimeNotAvailable,
    SandboxError,
    SessionNotFound,
    SetupFailed,
)
from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent, Phase, ResourceUsage
from golem.core.ids import new_id
from golem.core.sizes import ByteSize, format_size, parse_size
from golem.core.spec import WORKSPACE, BoxSpec, NetworkMode, resolve_workdir

__all__ = [
    "WORKSPACE",
    "BackendConfig",
    "BackendUnavailable",
    "BoxCrashed",
    "BoxSpec",
    "ByteSize",
    "ConfigError",
    "DockerBackendConfig",
    "EngineConfig",
    "ErrorEvent",
    "ExecEvent",
    "ExecTimeout",
    "ExitEvent",
    "GolemConfig",
    "GolemError",
    "ImageNotFound",
    "ImageRecipe",
    "InvalidRequest",
    "NetworkMode",
    "OutputEvent",
    "Phase",
    "PoolConfig",
    "ProcessBackendConfig",
    "ProtocolError",
    "ResourceUsage",
    "RuntimeNotAvailable",
    "SandboxError",
    "SessionNotFound",
    "SetupFailed",
    "format_size",
    "load_config",
    "new_id",
    "parse_size",
    "resolve_workdir",
]
