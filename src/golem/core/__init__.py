"""golem.core: configuration models, errors, event types, ids, sizes.

Its names are imported on first use: ``golem.core.errors`` and the other light modules
must not load pydantic and the configuration models for the CLI's `--help`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from golem.core.config import (
        BackendConfig,
        DockerBackendConfig,
        EngineConfig,
        GolemConfig,
        GvisorBackendConfig,
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
        ModelAuthError,
        ModelError,
        ModelRateLimited,
        ModelRequestRejected,
        ModelUnavailable,
        ProtocolError,
        RuntimeNotAvailable,
        SandboxError,
        SessionNotFound,
        SetupFailed,
        UnsafeBoxOutput,
    )
    from golem.core.events import (
        ErrorEvent,
        Event,
        EventSink,
        ExecEvent,
        ExitEvent,
        NetworkEvent,
        OutputEvent,
        Phase,
        ResourceUsage,
    )
    from golem.core.hostnames import (
        HostNames,
        HostPatterns,
        host_name_patterns,
    )
    from golem.core.ids import (
        new_id,
    )
    from golem.core.model_config import (
        ModelPrice,
        ModelsConfig,
        ProviderConfig,
    )
    from golem.core.network import (
        Credential,
        Decision,
        EgressPolicy,
        NetworkConfig,
    )
    from golem.core.sizes import (
        ByteSize,
        format_size,
        parse_size,
    )
    from golem.core.spec import (
        BOX_PATH,
        GOLEM_HOME,
        WORKSPACE,
        BoxSpec,
        NetworkMode,
        resolve_workdir,
    )

_HOMES = {
    "BackendConfig": "config",
    "DockerBackendConfig": "config",
    "EngineConfig": "config",
    "GolemConfig": "config",
    "GvisorBackendConfig": "config",
    "ImageRecipe": "config",
    "PoolConfig": "config",
    "ProcessBackendConfig": "config",
    "load_config": "config",
    "BackendUnavailable": "errors",
    "BoxCrashed": "errors",
    "ConfigError": "errors",
    "ExecTimeout": "errors",
    "GolemError": "errors",
    "ImageNotFound": "errors",
    "InvalidRequest": "errors",
    "ModelAuthError": "errors",
    "ModelError": "errors",
    "ModelRateLimited": "errors",
    "ModelRequestRejected": "errors",
    "ModelUnavailable": "errors",
    "ProtocolError": "errors",
    "RuntimeNotAvailable": "errors",
    "SandboxError": "errors",
    "SessionNotFound": "errors",
    "SetupFailed": "errors",
    "UnsafeBoxOutput": "errors",
    "ErrorEvent": "events",
    "Event": "events",
    "EventSink": "events",
    "ExecEvent": "events",
    "ExitEvent": "events",
    "NetworkEvent": "events",
    "OutputEvent": "events",
    "Phase": "events",
    "ResourceUsage": "events",
    "HostNames": "hostnames",
    "HostPatterns": "hostnames",
    "host_name_patterns": "hostnames",
    "new_id": "ids",
    "ModelPrice": "model_config",
    "ModelsConfig": "model_config",
    "ProviderConfig": "model_config",
    "Credential": "network",
    "Decision": "network",
    "EgressPolicy": "network",
    "NetworkConfig": "network",
    "ByteSize": "sizes",
    "format_size": "sizes",
    "parse_size": "sizes",
    "BOX_PATH": "spec",
    "GOLEM_HOME": "spec",
    "WORKSPACE": "spec",
    "BoxSpec": "spec",
    "NetworkMode": "spec",
    "resolve_workdir": "spec",
}
"""Each exported name and the module of golem.core it lives in."""

__all__ = [
    "BOX_PATH",
    "GOLEM_HOME",
    "WORKSPACE",
    "BackendConfig",
    "BackendUnavailable",
    "BoxCrashed",
    "BoxSpec",
    "ByteSize",
    "ConfigError",
    "Credential",
    "Decision",
    "DockerBackendConfig",
    "EgressPolicy",
    "EngineConfig",
    "ErrorEvent",
    "Event",
    "EventSink",
    "ExecEvent",
    "ExecTimeout",
    "ExitEvent",
    "GolemConfig",
    "GolemError",
    "GvisorBackendConfig",
    "HostNames",
    "HostPatterns",
    "ImageNotFound",
    "ImageRecipe",
    "InvalidRequest",
    "ModelAuthError",
    "ModelError",
    "ModelPrice",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelUnavailable",
    "ModelsConfig",
    "NetworkConfig",
    "NetworkEvent",
    "NetworkMode",
    "OutputEvent",
    "Phase",
    "PoolConfig",
    "ProcessBackendConfig",
    "ProtocolError",
    "ProviderConfig",
    "ResourceUsage",
    "RuntimeNotAvailable",
    "SandboxError",
    "SessionNotFound",
    "SetupFailed",
    "UnsafeBoxOutput",
    "format_size",
    "host_name_patterns",
    "load_config",
    "new_id",
    "parse_size",
    "resolve_workdir",
]


def __getattr__(name: str) -> object:
    """``golem.core.NAME``, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'golem.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"golem.core.{home}"), name)
    globals()[name] = value
    return value
