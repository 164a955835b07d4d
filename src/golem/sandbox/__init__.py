"""golem.sandbox: isolated boxes where every command of a run executes.

async with LocalEngine(config) as engine:
    async with engine.session(engine.spec(memory="1g")) as box:
        result = await box.execute("pytest -q")

Callers type against the protocols ``Engine``, ``Box``, ``Interaction`` and ``Terminal``
(``golem.sandbox.contracts``); ``LocalEngine`` is this machine's implementation, and a golem
server's (``golem.service.client.RemoteEngine``) satisfies the same protocols.
"""

from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent, ResourceUsage
from golem.core.spec import BoxSpec
from golem.sandbox.box import LocalBox, LocalInteraction, LocalTerminal, as_request
from golem.sandbox.contracts import (
    Backend,
    Box,
    Engine,
    Interaction,
    Request,
    SpecLike,
    StartedBox,
    Terminal,
)
from golem.sandbox.engine import LocalEngine
from golem.sandbox.masking import SecretMasker
from golem.sandbox.models import (
    BackgroundProcess,
    BoxInfo,
    BoxPath,
    ExecRequest,
    ExecResult,
    ProcessOutput,
    Runtime,
    SnapshotInfo,
)
from golem.sandbox.snapshots import DEFAULT_TENANT, TENANT_LABEL, SnapshotStore
from golem.sandbox.specs import configured_spec
from golem.sandbox.sync import SyncBox, SyncEngine

__all__ = [
    "DEFAULT_TENANT",
    "TENANT_LABEL",
    "Backend",
    "BackgroundProcess",
    "Box",
    "BoxInfo",
    "BoxPath",
    "BoxSpec",
    "Engine",
    "ErrorEvent",
    "ExecEvent",
    "ExecRequest",
    "ExecResult",
    "ExitEvent",
    "Interaction",
    "LocalBox",
    "LocalEngine",
    "LocalInteraction",
    "LocalTerminal",
    "OutputEvent",
    "ProcessOutput",
    "Request",
    "ResourceUsage",
    "Runtime",
    "SecretMasker",
    "SnapshotInfo",
    "SnapshotStore",
    "SpecLike",
    "StartedBox",
    "SyncBox",
    "SyncEngine",
    "Terminal",
    "as_request",
    "configured_spec",
]
