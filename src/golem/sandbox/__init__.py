"""golem.sandbox: isolated boxes where every command of a run executes.

async with LocalEngine(config) as engine:
    async with engine.session(engine.spec(memory="1g")) as box:
        result = await box.execute("pytest -q")

Callers type against the protocols ``Engine``, ``Box``, ``Interaction`` and ``Terminal``
(``golem.sandbox.contracts``); ``LocalEngine`` is this machine's implementation, and a golem
server's (``RemoteEngine``, ``golem.sandbox.remote``) satisfies the same protocols.
``make_engine(config)`` is the one place an engine is chosen: a server's when ``[remote]
url`` is set, else this machine's.
"""

from typing import TYPE_CHECKING, Any

from golem.core.events import ErrorEvent, ExecEvent, ExitEvent, OutputEvent, ResourceUsage
from golem.core.spec import BoxSpec
from golem.sandbox.box import LocalBox, LocalInteraction, LocalTerminal, as_request
from golem.sandbox.choice import make_engine, server_of
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
from golem.sandbox.engine_images import engine_images, load_images, save_images
from golem.sandbox.image_archive import KeptImages, keep_image_archive
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
from golem.sandbox.records import process_alive, process_start_time
from golem.sandbox.remote.frames import (
    MOST_CALLS_HEADER,
    AnswerFrame,
    CallFrame,
    CallMessage,
    EndFrame,
    ErrorFrame,
    EventFrame,
    OpenCall,
    ProblemFrame,
    Resize,
    ResultFrame,
    read_answer,
)
from golem.sandbox.sessions import BoxSessions
from golem.sandbox.snapshots import DEFAULT_TENANT, TENANT_LABEL, SnapshotStore
from golem.sandbox.specs import configured_spec
from golem.sandbox.sync import SyncBox, SyncEngine

if TYPE_CHECKING:
    from golem.sandbox.remote.box import RemoteBox
    from golem.sandbox.remote.calls import RemoteInteraction, RemoteTerminal
    from golem.sandbox.remote.connection import ServerConnection, error_of
    from golem.sandbox.remote.engine import RemoteEngine, spec_payload

_REMOTE = {
    "RemoteBox": "golem.sandbox.remote.box",
    "RemoteInteraction": "golem.sandbox.remote.calls",
    "RemoteTerminal": "golem.sandbox.remote.calls",
    "RemoteEngine": "golem.sandbox.remote.engine",
    "ServerConnection": "golem.sandbox.remote.connection",
    "error_of": "golem.sandbox.remote.connection",
    "spec_payload": "golem.sandbox.remote.engine",
}
"""The remote engine's names, imported on first use: a local box must not pay for the HTTP
and WebSocket clients' imports."""

__all__ = [
    "DEFAULT_TENANT",
    "MOST_CALLS_HEADER",
    "TENANT_LABEL",
    "AnswerFrame",
    "Backend",
    "BackgroundProcess",
    "Box",
    "BoxInfo",
    "BoxPath",
    "BoxSessions",
    "BoxSpec",
    "CallFrame",
    "CallMessage",
    "EndFrame",
    "Engine",
    "ErrorEvent",
    "ErrorFrame",
    "EventFrame",
    "ExecEvent",
    "ExecRequest",
    "ExecResult",
    "ExitEvent",
    "Interaction",
    "KeptImages",
    "LocalBox",
    "LocalEngine",
    "LocalInteraction",
    "LocalTerminal",
    "OpenCall",
    "OutputEvent",
    "ProblemFrame",
    "ProcessOutput",
    "RemoteBox",
    "RemoteEngine",
    "RemoteInteraction",
    "RemoteTerminal",
    "Request",
    "Resize",
    "ResourceUsage",
    "ResultFrame",
    "Runtime",
    "SecretMasker",
    "ServerConnection",
    "SnapshotInfo",
    "SnapshotStore",
    "SpecLike",
    "StartedBox",
    "SyncBox",
    "SyncEngine",
    "Terminal",
    "as_request",
    "configured_spec",
    "engine_images",
    "error_of",
    "keep_image_archive",
    "load_images",
    "make_engine",
    "process_alive",
    "process_start_time",
    "read_answer",
    "save_images",
    "server_of",
    "spec_payload",
]


def __getattr__(name: str) -> Any:
    """A remote engine's name, its module imported now (see ``_REMOTE``)."""
    if name in _REMOTE:
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module(_REMOTE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
